"""Arguments of `npuwatch doctor` (handler: doctor_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

_EXAMPLES = """\
examples:
  npuwatch doctor                                  # this host, as the job's user
  npuwatch doctor --sample-seconds 10              # watch the log folder grow for longer
  npuwatch doctor --toolkit /opt/Ascend/ascend-toolkit/8.0.RC1 --log-dir /data/ascend/log
  npuwatch doctor --npu-smi '/usr/local/sbin/npu-smi info'
  npuwatch doctor --json | jq -r '.checks[] | select(.status == "fail" or .status == "warn") | .key'

The first step of every investigation, in the order Ascend users diagnose: the environment (CANN
toolkit, driver, firmware, torch and torch_npu), then the devices (container, /dev/davinci*
nodes, npu-smi and the health of every chip), then the logs (the ASCEND_* log variables and the
folder CANN writes to: its size, how fast it grows, the age of its newest file). When npu-smi
answers, doctor also asks it for the firmware each NPU runs (`-t board -i N`: a container seldom
has the firmware's version file; NPUs on different firmware, or not yet on the installed one,
warn) and, for a chip that is not OK, for its alarm code (`-t health -i N -c C`).

Each check is ok, warn (works, but will hurt: DEBUG logging on, a full disk), fail (broken: a
chip not OK, a container without its /dev/davinci*, npu-smi erroring) or absent (not on this
host: on a machine without an NPU, everything Ascend is absent and that is no error). Every warn
and fail comes with the first thing to do. Run it as the user that runs the jobs: the log
variables and ~/ascend/log are that user's.

exit status: 0 nothing wrong (every check ok or absent), 1 at least one warn or fail,
2 bad usage (an option's folder does not exist, an empty --npu-smi).
"""


def add_doctor_command(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check CANN, driver, devices and log settings: the first step of an investigation",
        description="Check this host's Ascend environment, devices and logs, in diagnostic order.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    doctor.add_argument(
        "--npu-smi",
        default="npu-smi info",
        metavar="COMMAND",
        help="the command that prints the device table (default: %(default)s)",
    )
    doctor.add_argument(
        "--toolkit",
        type=Path,
        metavar="PATH",
        help="the CANN toolkit folder to report (default: $ASCEND_TOOLKIT_HOME, "
        "$ASCEND_HOME_PATH, /usr/local/Ascend/ascend-toolkit/latest and its siblings, "
        "~/Ascend/ascend-toolkit/latest)",
    )
    doctor.add_argument(
        "--log-dir",
        type=Path,
        metavar="PATH",
        help="the log folder to measure (default: $ASCEND_PROCESS_LOG_PATH, "
        "$ASCEND_WORK_PATH/log, ~/ascend/log)",
    )
    doctor.add_argument(
        "--sample-seconds",
        type=float,
        default=2.0,
        metavar="S",
        help="watch the log folder grow for S seconds; 0 skips it (default: %(default)g)",
    )
    doctor.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    doctor.set_defaults(handler="npuwatch.commands.doctor_run:run_doctor")
