"""Arguments of `npuwatch profile` (handler: profile_run)."""

from __future__ import annotations

import argparse
from typing import Any

_EXAMPLES = """\
examples:
  npuwatch profile summary ./PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA
  npuwatch profile summary /data/job42/prof            # every rank's *_ascend_pt below it
  npuwatch profile summary worker0_31001_20250301080000123_ascend_pt/ASCEND_PROFILER_OUTPUT
  npuwatch profile summary /data/job42/prof --top 20 --plot job42.png
  npuwatch profile summary /data/job42/prof --json | jq '.by_time[] | {op_name, total_us}'

PROF_DIR is an msprof PROF_* folder (mindstudio_profiler_output/, or device_N/summary/ of
older CANN), a torch_npu *_ascend_pt folder or its ASCEND_PROFILER_OUTPUT, or a folder that
holds the runs of several ranks. Several runs are added together for the operator tables and
compared for step time. Export msprof data as CSV first (msprof --export=on); torch_npu runs are
complete when ASCEND_PROFILER_OUTPUT/analyse.done exists.

The report: top operators by total time and by count, operator types and cores (AI_CORE,
AI_VECTOR_CORE, AI_CPU, MIX_*, HCCL ...) with their share of kernel time, host<->device copies
(MEMCPY/H2D/D2H tasks on the device, aclrtMemcpy* calls on the host), each rank's mean step
(computing, communication not overlapped, free) and the spread between ranks, and the problems
met while reading (malformed rows are skipped and listed). --json durations are in µs (fields
ending in _us). --plot needs matplotlib: pip install 'npuwatch[plot]'.

exit status: 0 summary printed, 1 a finding (one rank's mean step is more than 5% slower than
the fastest rank's), 2 bad usage, a missing path, or nothing recognisable in it.
"""


def add_profile_commands(commands: Any) -> None:
    profile = commands.add_parser(
        "profile",
        help="summarise msprof / torch_npu profiling output",
        description="Read profiling output of msprof (PROF_*) and the Ascend PyTorch Profiler "
        "(*_ascend_pt).",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = profile.add_subparsers(title="actions", metavar="ACTION", required=True)
    summary = actions.add_parser(
        "summary",
        help="where device time goes, per operator, core and rank",
        description="Summarise one profiling run, or the runs of several ranks: top operators, "
        "operator types, cores, host<->device copies, step times and the slow rank.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument(
        "path", metavar="PROF_DIR", help="PROF_*, *_ascend_pt, or a folder holding several"
    )
    summary.add_argument(
        "--top",
        type=_positive,
        default=10,
        metavar="N",
        help="operators and types listed (default: 10)",
    )
    summary.add_argument("--json", action="store_true", help="print one JSON document")
    summary.add_argument(
        "--plot", metavar="FILE.png", help="also draw the top operators and step times as a PNG"
    )
    summary.set_defaults(handler="npuwatch.commands.profile_run:run_summary")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value
