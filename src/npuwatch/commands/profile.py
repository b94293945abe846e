"""Arguments of `npuwatch profile` (handler: profile_run)."""

from __future__ import annotations

import argparse
from typing import Any

from npuwatch.commands.argument_types import positive_int

_EXAMPLES = """\
examples:
  npuwatch profile summary ./PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA
  npuwatch profile summary /data/job42/prof            # every rank's *_ascend_pt below it
  npuwatch profile summary worker0_31001_20250301080000123_ascend_pt/ASCEND_PROFILER_OUTPUT
  npuwatch profile summary /data/job42/prof --top 20 --plot job42.png
  npuwatch profile summary /data/job42/prof --json | jq '.by_time[] | {op_name, total_us}'
  npuwatch profile summary ./OPPROF_20260605170714_RYQFPTCBYWBFCNBI     # msprof op output
  npuwatch profile summary ./opprof_out --json \\
      | jq '.launches[] | {op_name, duration_us, bound: .figures.bound_label}'

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

PROF_DIR may also be what `msprof op` (msOpProf) wrote: an OPPROF_<time>_<16 letters> folder
(one launch flattened, <OpName>/<n>/ per launch, or device<id>/<OpName>/<n>/), or the --output
folder holding several. Its report: each operator's launches and durations, then per launch
the four key figures: the bound (the pipe busy most of the core time: compute-bound (cube or
vector), memory-bound (MTE1/MTE2/MTE3/FIXPIPE), scalar-bound, or latency-bound when no pipe is
busy 30% of the time), AI Core utilisation (the busier of cube and vector), bandwidth use (the
most used channel's *_bw_usage_rate and the main-memory GB/s) and the copy share (MTE1-3 time);
with block dim, frequency, L2 hit rate, conflicts, and the hottest source lines and
instructions of `msprof op simulator` runs. A launch run below its rated frequency is a finding.

exit status: 0 summary printed, 1 a finding (one rank's mean step is more than 5% slower than
the fastest rank's; an msOpProf launch down-clocked), 2 bad usage, a missing path, or nothing
recognisable in it.
"""


def add_profile_commands(commands: Any) -> None:
    profile = commands.add_parser(
        "profile",
        help="summarise msprof / torch_npu / msOpProf profiling output",
        description="Read profiling output of msprof (PROF_*), the Ascend PyTorch Profiler "
        "(*_ascend_pt) and msOpProf (msprof op: OPPROF_*).",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = profile.add_subparsers(title="actions", metavar="ACTION", required=True)
    summary = actions.add_parser(
        "summary",
        help="where device time goes, per operator, core and rank",
        description="Summarise one profiling run, or the runs of several ranks: top operators, "
        "operator types, cores, host<->device copies, step times and the slow rank; for "
        "msOpProf output, what bounds each operator launch.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument(
        "path",
        metavar="PROF_DIR",
        help="PROF_*, *_ascend_pt, OPPROF_*, or a folder holding several",
    )
    summary.add_argument(
        "--top",
        type=positive_int,
        default=10,
        metavar="N",
        help="operators and types listed; msOpProf: operators and launches (default: 10)",
    )
    summary.add_argument("--json", action="store_true", help="print one JSON document")
    summary.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also draw the top operators and step times (msOpProf: the pipe "
        "shares of each launch) as a PNG",
    )
    summary.set_defaults(handler="npuwatch.commands.profile_run:run_summary")
