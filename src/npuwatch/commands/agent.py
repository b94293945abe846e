"""Arguments of `npuwatch agent` (handler: agent_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

_EXAMPLES = """\
examples:
  npuwatch agent                                  # /etc/npuwatch/npuwatch.toml, or the defaults
  npuwatch agent --config ./npuwatch.toml --console
  npuwatch agent --root ~/ascend/log --state-directory ~/.local/state/npuwatch --console

The agent follows every CANN log under its roots (by default $ASCEND_PROCESS_LOG_PATH, else
$ASCEND_WORK_PATH/log, ~/ascend/log of the configured users and /var/log/npu/slog), parses each
line, matches the rules, and writes records and events to its journal in the state directory;
`npuwatch grep` searches that journal. Stop it with SIGTERM (Ctrl-C); reload configuration and
rules with SIGHUP: the files followed and the rules change at once, and what else changed is
named as waiting for a restart.

exit status:
  0  stopped on SIGTERM or SIGINT, what was read drained into the journal
  1  a worker thread died: systemd starts the agent again, which reads on from the last commit
  2  bad usage, or refused to start: a wrong configuration, a state directory it may not use,
     another agent on the same state directory (one line each on stderr)
"""


def add_agent_command(commands: Any) -> None:
    agent = commands.add_parser(
        "agent",
        help="follow the CANN logs of this host into the local journal (the service)",
        description="Run the per-host agent in the foreground: tail the CANN log trees, parse "
        "and match every record, and journal records and events durably, so that nothing is "
        "lost when CANN deletes old plogs or the agent restarts.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agent.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="configuration file (default: $NPUWATCH_CONFIG, else /etc/npuwatch/npuwatch.toml "
        "when it exists, else the defaults)",
    )
    agent.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help="follow this folder instead of the configured roots (repeatable)",
    )
    agent.add_argument(
        "--state-directory", type=Path, metavar="DIR", help="where the journal and cursors live"
    )
    agent.add_argument(
        "--console", action="store_true", help="also print records as they are journaled"
    )
    agent.add_argument(
        "--json", action="store_true", help="with --console: one JSON document per line"
    )
    agent.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the agent's own log on stderr (default INFO)",
    )
    agent.set_defaults(handler="npuwatch.commands.agent_run:run_agent")
