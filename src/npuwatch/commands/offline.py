"""Arguments of the offline commands: `parse`, `scan` and `schema` (handlers: offline_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.argument_types import context_lines, positive_int
from npuwatch.commands.outcome import exit_status

_EXAMPLES_PARSE = """\
examples:
  npuwatch parse ~/ascend/log/debug/plog/plog-3813_20250110175352846.log
  npuwatch parse --format table run/plog/*.log
  grep -h HCCL train.out | npuwatch parse - --timezone Asia/Shanghai | jq -r .error.code

JSON lines use nested ECS objects: .log.level, .log.logger, .process.pid, .error.code,
.event.original, .ascend.kind ... (see `npuwatch schema`).
"""

_EXAMPLES_SCAN = """\
examples:
  npuwatch scan                      # $ASCEND_PROCESS_LOG_PATH, $ASCEND_WORK_PATH/log, ~/ascend/log
  npuwatch scan /data/job42/ascend/log
  npuwatch scan ./asys_output --json | jq '.error_codes[] | {code, count, first}'
  npuwatch scan /data/job42          # job42/host-a/, job42/worker-1/ ...: a collection
  npuwatch scan /data/job42 --json | jq '.incidents[0] | {summary, root_cause}'
  npuwatch scan /data/job42 --jobs 8 # its hosts read on 8 processes (default: every core)
  npuwatch scan --summaries /shared/job42/   # the files `npuwatch summarize` wrote

A folder whose sub-folders are none of CANN's own (debug, run, plog, device-N, process_log ...)
is a collection: each sub-folder is a host, and its name is the host.name of its records.

When a collective failed, the report opens with its incidents: the device that failed first
(host, device, rank, communicator), why, the chain of ranks waiting for it, the victims by host,
the evidence lines and the MindCluster FaultDiag code of the same decision.

exit status: 0 no error records, 1 error records found, 2 bad usage or unreadable input.
"""

_EXAMPLES_SUMMARIZE = """\
examples:
  npuwatch summarize -o /shared/job42/$(hostname).json          # on every host
  pdsh -w 'worker-[0-255]' 'npuwatch summarize -o /shared/job42/$(hostname).json'
  ssh worker-3 npuwatch summarize --timezone Asia/Shanghai > worker-3.json
  npuwatch scan --summaries /shared/job42/                       # once, anywhere

A summary holds the host's counts, its processes' first errors with their lines, the rule
events with their context, and the collective-failure facts: kilobytes to a few megabytes for
gigabytes of logs. It is read by the same npuwatch version that wrote it (the format has a
version; another one is refused with a line saying so).

exit status: 0 summary written, 2 bad usage or unreadable input.
"""


def add_offline_commands(commands: Any) -> None:
    parse = commands.add_parser(
        "parse",
        help="parse log files into records (JSON lines or a table)",
        description="Parse CANN log files into structured records, one per log event "
        "(multi-line records are kept whole).",
        epilog=_EXAMPLES_PARSE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse.epilog = f"{parse.epilog}\n{exit_status('every file parsed')}"
    parse.add_argument("paths", nargs="+", metavar="PATH", help="log file, or - for stdin")
    parse.add_argument(
        "--format", choices=("jsonl", "table"), default="jsonl", help="output (default: jsonl)"
    )
    _add_common(parse, host_help="host.name to put on every record")
    parse.set_defaults(handler="npuwatch.commands.offline_run:run_parse")

    scan = commands.add_parser(
        "scan",
        help="summarise a whole log tree after a failure",
        description="Walk a CANN log tree (or a collection of hosts), parse every file, and "
        "report which device failed first in a collective failure and who was only waiting, "
        "counts by level, module and log kind, every error code with where and when it was "
        "seen, and the first ERROR of each process with the lines before it.",
        epilog=_EXAMPLES_SCAN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument(
        "root",
        nargs="?",
        metavar="DIR",
        help="log tree or file (default: $ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log, "
        "else ~/ascend/log)",
    )
    scan.add_argument("--json", action="store_true", help="print one JSON document")
    add_rules_option(scan)
    scan.add_argument("--no-rules", action="store_true", help="only the summary, no findings")
    scan.add_argument(
        "--follow-links",
        action="store_true",
        help="follow links to files found in the tree, but only to a file inside the tree "
        "owned by the link's owner (default: links are skipped and said, so that no one can "
        "make a scan run as root read a file the link names)",
    )
    scan.add_argument(
        "--context",
        type=context_lines,
        default=50,
        metavar="N",
        help="lines shown before each process's first ERROR (default: 50)",
    )
    scan.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="read the hosts of a collection on N processes (default: the cores this command "
        "may use); the report is the same for any N",
    )
    scan.add_argument(
        "--summaries",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="make the report from host summaries (files written by `npuwatch summarize` on "
        "each host, or folders of them) instead of reading logs: the second stage of a scan "
        "whose hosts read their own logs",
    )
    _add_common(
        scan,
        host_help="host.name of a single log tree (a collection's hosts are its folder names)",
    )
    scan.set_defaults(handler="npuwatch.commands.offline_run:run_scan")

    summarize = commands.add_parser(
        "summarize",
        help="summarise this host's log tree into a file, for a scan of many hosts",
        description="Read one host's CANN log tree (as scan does: counts, error codes, first "
        "errors, rule findings, and the collective-failure facts of every process) and write "
        "what a central `npuwatch scan --summaries` needs of it into one small JSON file. Run "
        "it on every host with your parallel shell (pdsh, clush, Ansible), gather the files, "
        "and scan them: the report is the one `npuwatch scan` gives for the hosts' logs "
        "gathered in one folder, one sub-folder a host.",
        epilog=_EXAMPLES_SUMMARIZE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summarize.add_argument(
        "root",
        nargs="?",
        metavar="DIR",
        help="this host's log tree (default: as for scan)",
    )
    summarize.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="where to write the summary (default: - for standard output); a file is replaced "
        "whole, never written through a link",
    )
    add_rules_option(summarize)
    summarize.add_argument("--no-rules", action="store_true", help="no rule findings")
    summarize.add_argument(
        "--follow-links", action="store_true", help="as for scan: links to files in the tree"
    )
    summarize.add_argument(
        "--context",
        type=context_lines,
        default=50,
        metavar="N",
        help="lines kept before each process's first ERROR (default: 50)",
    )
    _add_common(summarize, host_help="this host's name in the report (default: its hostname)")
    # json: what it prints on standard output is JSON, kept exact (cli._prints_data)
    summarize.set_defaults(handler="npuwatch.commands.summaries_run:run_summarize", json=True)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a record",
        description="Print the JSON Schema of the records npuwatch writes (ECS field names).",
        epilog=exit_status("printed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schema.set_defaults(handler="npuwatch.commands.offline_run:run_schema")


def add_rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="more rule packs (a folder of *.yaml or one file), after the defaults and "
        "/etc/npuwatch/rules.d; may be given several times. The packs read are cached in "
        "$NPUWATCH_CACHE (else ~/.cache/npuwatch; empty: no cache) until a file changes",
    )


def _add_common(parser: argparse.ArgumentParser, host_help: str) -> None:
    parser.add_argument(
        "--timezone",
        metavar="TZ",
        help="zone of the times in the logs, which CANN writes without one "
        "(IANA name such as Asia/Shanghai; default: this host's zone)",
    )
    parser.add_argument("--host", metavar="NAME", help=host_help)
