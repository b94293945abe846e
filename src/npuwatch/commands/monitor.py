"""Arguments of `npuwatch monitor` (handler: monitor_run)."""

from __future__ import annotations

import argparse
from typing import Any

from npuwatch.commands.argument_types import positive_int, ratio_above_one

_EXAMPLES = """\
examples:
  npuwatch monitor summary ./monitor_output
  npuwatch monitor summary /data/job42/monitor_output/rank3       # one rank
  npuwatch monitor summary ./monitor_output --top 20 --spike-ratio 5 --spike-window 50
  npuwatch monitor summary ./monitor_output --spike-op norm --spike-op max
  npuwatch monitor summary ./monitor_output --plot grad.png --metric grad_reduced:norm
  npuwatch monitor summary ./monitor_output --json | jq '.ranks[] | {rank, first_trouble_step}'

PATH is msprobe monitor's output folder ($MONITOR_OUTPUT_DIR, ./monitor_output by default), flat
or with one folder per rank (rank0/, <time>-rank0-<id>/), or one rank's folder. It is read with
format "csv": <data type>_<first>-<last>.csv files (actv, actv_grad, exp_avg, exp_avg_sq,
grad_unreduced, grad_reduced, param_origin, param_updated) with the columns vpp_stage, name,
step, [micro_step,] and the configured ops; anomaly_detected/*.json (the AnomalyTurbulence and
AnomalyNan alerts) and anomaly_analyse.json are read when present. The rank comes from the
folder name, else from a TensorBoard-style tag in the name column (.../rank1/...).

The report, per data type, statistic (op) and rank: the steps msprobe's anomaly detection fired
at (by rule); NaN/inf statistics and nans > 0; spikes, a step whose |value| is more than
--spike-ratio times the median of the previous --spike-window steps of the same parameter
(only for the --spike-op ops, norm by default); per rank the first step where anything went
wrong, the last step recorded and the latest gradient norm; then the problems met while
reading (damaged rows and files are skipped and listed). --plot draws one statistic over the
steps (one line per rank, or per parameter for one rank), alerts and NaN steps marked; it
needs matplotlib: pip install 'npuwatch[plot]'.

exit status: 0 no anomaly, NaN or spike; 1 findings (any of them); 2 bad usage, a missing
path, or no monitor output in it.
"""


def add_monitor_commands(commands: Any) -> None:
    monitor = commands.add_parser(
        "monitor",
        help="summarise msprobe training-monitor output",
        description="Read the output of msprobe's training-state monitor (monitor_output/).",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = monitor.add_subparsers(title="actions", metavar="ACTION", required=True)
    summary = actions.add_parser(
        "summary",
        help="anomalies, NaN and spikes per data type, statistic and rank",
        description="Summarise one monitor run: the steps where anomalies fired, NaN/inf "
        "statistics, spikes, and each rank's first trouble and latest gradient norm.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument("path", metavar="PATH", help="monitor_output/, or one rank's folder")
    summary.add_argument(
        "--top",
        type=positive_int,
        default=10,
        metavar="N",
        help="steps and names listed per group (default: 10)",
    )
    summary.add_argument("--json", action="store_true", help="print one JSON document")
    summary.add_argument(
        "--plot", metavar="FILE.png", help="also draw a statistic over the steps as a PNG"
    )
    summary.add_argument(
        "--metric",
        metavar="[TYPE:]OP",
        default="grad_reduced:norm",
        help="what --plot draws, e.g. actv:max or norm (default: grad_reduced:norm, else the "
        "first data type that has the op)",
    )
    summary.add_argument(
        "--spike-ratio",
        type=ratio_above_one,
        default=3.0,
        metavar="K",
        help="a spike is |value| > K × the median of the steps before (default: 3)",
    )
    summary.add_argument(
        "--spike-window",
        type=positive_int,
        default=20,
        metavar="W",
        help="steps the median is taken over; a series is judged after W steps (default: 20)",
    )
    summary.add_argument(
        "--spike-op",
        action="append",
        metavar="OP",
        help="an op checked for spikes; repeat for several (default: norm)",
    )
    summary.set_defaults(handler="npuwatch.commands.monitor_run:run_summary")
