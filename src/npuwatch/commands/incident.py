"""Arguments of `npuwatch incident` (handlers: incident_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.outcome import exit_status

_EXAMPLES = """\
examples:
  npuwatch incident list                  # detected or revised in the last day, newest first
  npuwatch incident list --open           # every incident not closed, however old
  npuwatch incident list --since 7d --open
  npuwatch incident show 3q2dYxX1m0g5ZKp7Bqe2 --json

The incidents the cluster correlator (`npuwatch correlate`) wrote to
logs-ascend.incidents-<namespace> of the search engine of [sinks.elasticsearch]: list shows
one line each (status, when the correlator last revised it, when the fault happened by the logs,
kind, root cause, how many ranks waited). --since goes by when the correlator detected or
revised the incident, not by the time in the logs: a backfill of logs weeks old, or a host
whose clock is off, is listed when it was correlated. show prints
one the way `npuwatch scan` prints its incidents, with the agents' word on whether each root
cause's host is alive, or the stored document (--json).

exit status: 0 listed or shown, 1 no incident found (list) or no such incident (show), 2 bad
usage, configuration or an unreachable search engine.
"""


def add_incident_commands(commands: Any) -> None:
    incident = commands.add_parser(
        "incident",
        help="list and show the cluster correlator's incidents",
        description="Read the incidents the cluster correlator wrote to the search engine.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = incident.add_subparsers(title="actions", metavar="ACTION", required=True)
    listed = actions.add_parser(
        "list",
        help="one line per incident, newest first",
        epilog=exit_status("incidents listed", "no incident in the window asked for"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listed.add_argument(
        "--since",
        metavar="DURATION",
        help="detected or revised within (default 24h; with --open, any time)",
    )
    listed.add_argument("--open", action="store_true", help="only those not closed")
    listed.set_defaults(handler="npuwatch.commands.incident_run:run_list")
    shown = actions.add_parser(
        "show",
        help="one incident, as scan prints it",
        epilog=exit_status("shown", "no incident of that id"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shown.add_argument("id", metavar="ID", help="the incident's id (from list)")
    shown.set_defaults(handler="npuwatch.commands.incident_run:run_show")
    for action in (listed, shown):
        action.add_argument(
            "--config", type=Path, metavar="FILE", help="configuration file (as for the agent)"
        )
        action.add_argument("--json", action="store_true", help="the stored documents")
        action.add_argument(
            "--timezone", default="local", metavar="ZONE", help="zone of the times printed"
        )
