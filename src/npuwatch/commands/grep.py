"""Arguments of `npuwatch grep` (handler: grep_run)."""

from __future__ import annotations

import argparse
from typing import Any

from npuwatch.commands.argument_types import context_lines, identifier, match_limit

_EXAMPLES = """\
examples:
  npuwatch grep --level ERROR --code E30009 --device 3 --since 1h
  npuwatch grep 'HcclCommInit' --module HCCL --since "2025-09-14 09:30" --until "2025-09-14 10:00"
  npuwatch grep --category timeout -C 5
  npuwatch grep --events --since 1d
  npuwatch grep --level ERROR --journaled-since 10m   # what came in lately, whatever its time
  npuwatch grep --code EZ9999 --json | jq -r '.process.pid'
  npuwatch grep --baseline -i 'matmul'      # the operators of the baseline archive

Answers come from the agent's journal: every record of every followed file, kept after CANN has
deleted the plog. A question naming --level (WARNING or above) or --code is answered from the
journal's index without reading the rest. Times without a zone are this host's local time;
--since and --until (and --journaled-since, --journaled-until) also take a duration back from
now (30m, 1h, 2d). --since and --until go by the time each line says; the --journaled- ones by
when this host's agent journaled it.

Text output is the original log lines, each prefixed with its file (like grep -H); -C shows the
records around each match, from the same file. --json prints one ECS document per record.

--baseline searches the operator tables that `npuwatch baseline add` stored instead of the
journal: PATTERN is matched against op name and op type, and each match prints as
`<baseline>: op_name op_type task_type count total_us avg_us` (--json adds date, model,
scenario, min_us, max_us and the file).

exit status: 0 something matched, 1 nothing matched, 2 bad usage or no journal (like grep).
"""


def add_grep_command(commands: Any) -> None:
    grep = commands.add_parser(
        "grep",
        help="search the agent's journal: by text, level, module, code, device, time",
        description="Search the records (or the rule events) that the agent journaled.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    grep.add_argument(
        "pattern", nargs="?", metavar="PATTERN", help="regular expression searched in each record"
    )
    grep.add_argument("-i", "--ignore-case", action="store_true", help="PATTERN ignores case")
    grep.add_argument(
        "-F",
        "--fixed-strings",
        action="store_true",
        help="PATTERN is a plain string, not a regular expression (device_id=3, a[0])",
    )
    grep.add_argument(
        "--since",
        metavar="WHEN",
        help="records the log says happened at or after this time (or this long ago: 1h); "
        "the time written in each line, not when the agent journaled it",
    )
    grep.add_argument(
        "--until", metavar="WHEN", help="records the log says happened up to this time"
    )
    grep.add_argument(
        "--journaled-since",
        metavar="WHEN",
        help="records the agent journaled at or after this time (or this long ago), whatever "
        "time their lines say: a backfill of old logs, a host whose clock is wrong",
    )
    grep.add_argument(
        "--journaled-until", metavar="WHEN", help="records the agent journaled up to this time"
    )
    grep.add_argument(
        "--level", metavar="LEVEL[,LEVEL]", help="only these levels (ERROR, WARNING, INFO ...)"
    )
    grep.add_argument(
        "--module", metavar="NAME[,NAME]", help="only these CANN modules (HCCL, GE, RUNTIME ...)"
    )
    grep.add_argument("--code", metavar="CODE[,CODE]", help="records carrying these error codes")
    grep.add_argument(
        "--category",
        metavar="NAME[,NAME]",
        help="records that triggered rule events of these categories (timeout, memory ...)",
    )
    grep.add_argument("--device", type=identifier, metavar="ID", help="only this NPU device")
    grep.add_argument("--host", metavar="NAME", help="only this host")
    grep.add_argument("--pid", type=identifier, metavar="PID", help="only this process")
    grep.add_argument(
        "--events", action="store_true", help="print the rule events instead of records"
    )
    grep.add_argument(
        "-C",
        "--context",
        type=context_lines,
        default=0,
        metavar="N",
        help="also print N records before and after each match",
    )
    grep.add_argument(
        "-m", "--max-count", type=match_limit, metavar="N", help="stop after N matches"
    )
    grep.add_argument("-c", "--count", action="store_true", help="print only how many matched")
    grep.add_argument("--json", action="store_true", help="one JSON document per line")
    grep.add_argument(
        "--no-filename", action="store_true", help="do not prefix lines with their file"
    )
    grep.add_argument(
        "--journal",
        metavar="DIR",
        help="journal folder, or the agent's state directory that holds it (default: the "
        "configured one, /var/lib/npuwatch/journal)",
    )
    grep.add_argument(
        "--timezone", metavar="TZ", help="zone of times given without one (default: this host's)"
    )
    grep.add_argument(
        "--baseline",
        action="store_true",
        help="search the baseline archive's operator tables (npuwatch baseline) instead",
    )
    grep.add_argument(
        "--archive",
        metavar="DIR",
        help="with --baseline: the archive folder (default: as for npuwatch baseline)",
    )
    grep.set_defaults(handler="npuwatch.commands.grep_run:run_grep")
