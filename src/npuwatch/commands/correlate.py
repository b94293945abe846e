"""Arguments of `npuwatch correlate` (handler: correlate_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.argument_types import positive_int

_EXAMPLES = """\
examples:
  npuwatch correlate                      # the cluster service, with /etc/npuwatch/npuwatch.toml
  npuwatch correlate --once               # one round: read, decide, write, print the incidents
  npuwatch correlate --journal host-a/state host-b/state --json   # offline, no search engine

The cluster correlator names, live, the device that failed first in a collective failure and
the ranks that were only waiting for it. It reads what every agent ships to the search engine
of [sinks.elasticsearch] (each process's topology facts, the collective failures, a heartbeat
per host: [collective] of the agents' configuration), feeds the root-cause engine of `scan`,
and writes one incident document per fault to logs-ascend.incidents-<namespace>, revised in
place as evidence arrives: provisional until the settle rule holds (the failure's HCCL timeout
and a grace have passed, or every rank reported), closed when the processes recovered or
nothing changed for [correlate] quiet_period. Run one or two per cluster (a second one writes
nothing twice: every write is conditional on the version it read); /metrics on [correlate]
listen (:9817) serves the open incidents for the AscendCollectiveIncident alert.

With --journal, the same incidents from the journals of several hosts' agents (their state
directories, copied to one machine), for sites without a search engine.

exit status:
  0  stopped cleanly; no incident (--once, --journal); a sound configuration (--check)
  1  incidents found (--once, --journal); problems in the configuration (--check, one line
     each on stderr)
  2  bad usage, an unreadable configuration file, or one the service cannot start with
"""


def add_correlate_command(commands: Any) -> None:
    correlate = commands.add_parser(
        "correlate",
        help="the cluster service: which device failed first, live, from every agent's data",
        description="Correlate the agents' collective failures across the cluster into incidents.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    correlate.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="configuration file (default: $NPUWATCH_CONFIG, else /etc/npuwatch/npuwatch.toml "
        "when it exists, else the defaults)",
    )
    correlate.add_argument(
        "--journal",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="read these agents' journals (state directories or journal folders) instead of "
        "the search engine, print the incidents and exit",
    )
    correlate.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --journal: read the journals on N processes (default: the cores this "
        "command may use); the incidents are the same for any N",
    )
    correlate.add_argument(
        "--once", action="store_true", help="one round against the search engine, then exit"
    )
    correlate.add_argument(
        "--check",
        action="store_true",
        help="check the configuration as the service reads it (secrets, web configuration, "
        "listen address), print what it would use, and exit (the unit's ExecStartPre)",
    )
    correlate.add_argument(
        "--json", action="store_true", help='with --once or --journal: {"incidents": [...]}'
    )
    correlate.add_argument(
        "--timezone",
        default="local",
        metavar="ZONE",
        help="zone the times are printed in (default: this host's)",
    )
    correlate.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the service's own log on stderr (default INFO)",
    )
    correlate.set_defaults(handler="npuwatch.commands.correlate_run:run_correlate")
