"""Arguments of `npuwatch precision` (handler: precision_run)."""

from __future__ import annotations

import argparse
from typing import Any

from npuwatch.commands.argument_types import fraction, non_negative, positive_int

_EXAMPLES = """\
examples:
  npuwatch precision summary ./compare_output              # every rank's compare_result_*
  npuwatch precision summary compare_result_rank0_20250302093000.xlsx --top 10
  npuwatch precision summary /data/job42/debug --plot job42_precision.png
  npuwatch precision summary ./compare_output --atol 0.005 --rtol 0.005   # re-judge
  npuwatch precision summary ./compare_output --json | jq '.comparisons[].first_failure'

PATH is one file or a folder searched recursively for: msprobe/ptdbg compare results
(compare_result_*.xlsx|csv, compare_result_rank{N}_*, debug_compare_result_*, real-data,
summary and md5 modes, 2023 ptdbg columns), the first-mismatch mode's compare_result_*.json and
diff_analyze_*.json, multi_ranks_compare_merge_*.xlsx, msit offline result_*.csv, the API
accuracy checker's accuracy_checking_result|details_*.csv and overflow_check's
anomaly_analyze_*.json. The rank is read from rank{N} in a file name (else 0).

The report: for each compare result, the operators in execution order with their verdict, the
first operator that fails, the layer where the error starts to grow (the first layer from which
every later layer fails: layers are read from operator names, Module.layers.5.* and the APIs
after it are layers.5) and the worst tensors by Cosine, MaxAbsErr, MaxRelativeErr and the
thousandth ratios; the first INF/NaN node of each rank with its stack; the APIs that fail the
API accuracy checker; and the problems met while reading (damaged rows and files are skipped and
listed). Verdicts come from the files (Result, Accuracy Reached or Not, IsPrecisionError);
--cosine, --atol, --rtol or --thousandth re-judge every tensor from its metrics (defaults are
msprobe's: 0.99, 0.001, 0.001, 0.999). --plot needs matplotlib: pip install 'npuwatch[plot]'.

exit status: 0 accuracy reached (no failing operator, no overflow node, no failing API),
1 accuracy not reached (a finding), 2 bad usage, a missing path, or nothing recognisable in it.
"""


def add_precision_commands(commands: Any) -> None:
    precision = commands.add_parser(
        "precision",
        help="summarise msprobe/msit precision compare, overflow and API accuracy results",
        description="Read the results of msprobe compare (and 2023 ptdbg), msit offline "
        "compare, msprobe overflow_check and the API accuracy checker.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = precision.add_subparsers(title="actions", metavar="ACTION", required=True)
    summary = actions.add_parser(
        "summary",
        help="the first failing operator and layer per rank, worst tensors, overflow, APIs",
        description="Summarise precision results: per rank, the first operator that fails, "
        "the layer where the error starts to grow, the worst tensors by each metric; the first "
        "INF/NaN node of each rank; the APIs that fail the accuracy checker.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument("path", metavar="PATH", help="a result file, or a folder holding several")
    summary.add_argument(
        "--top",
        type=positive_int,
        default=5,
        metavar="N",
        help="tensors listed per metric (default: 5)",
    )
    summary.add_argument("--json", action="store_true", help="print one JSON document")
    summary.add_argument(
        "--plot", metavar="FILE.png", help="also draw the error along the execution order as a PNG"
    )
    limits = summary.add_argument_group(
        "re-judging (any of these re-judges every tensor from its metrics)"
    )
    limits.add_argument(
        "--cosine", type=fraction, metavar="MIN", help="lowest Cosine that passes (0.99)"
    )
    limits.add_argument(
        "--atol", type=non_negative, metavar="MAX", help="largest MaxAbsErr that passes (0.001)"
    )
    limits.add_argument(
        "--rtol",
        type=non_negative,
        metavar="MAX",
        help="largest MaxRelativeErr that passes when MaxAbsErr is above atol (0.001)",
    )
    limits.add_argument(
        "--thousandth",
        type=fraction,
        metavar="MIN",
        help="lowest One Thousandth Err Ratio that passes (0.999)",
    )
    summary.set_defaults(handler="npuwatch.commands.precision_run:run_summary")
