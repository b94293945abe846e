"""Arguments of `npuwatch baseline` (handlers: baseline_run).

The help texts come from the library's rules (names, archive, threshold) so that --help and the
code cannot disagree; those modules import no pandas, so that --help stays quick.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from npuwatch.commands.argument_types import count_or_zero
from npuwatch.profiling.baseline.archive import ARCHIVE_RULE, OPERATORS_HEADER
from npuwatch.profiling.baseline.names import NAME_RULE
from npuwatch.profiling.baseline.rules import (
    BY_NAME,
    BY_TYPE,
    DEFAULT_FIGURE_THRESHOLD_PP,
    DEFAULT_MIN_TIME_US,
    DEFAULT_THRESHOLD,
    FIGURE_THRESHOLD_RULE,
    THRESHOLD_RULE,
)

_WIDTH = 96
_EXAMPLES = """\
examples:
  # after each optimisation, keep the profile's operator table
  npuwatch baseline add ./prof --model llama2-7b --scenario pretrain-bs8
  npuwatch baseline add ./msprof_out --model resnet50 --scenario infer-b8 --date 2025-03-01
  npuwatch baseline add ./OPPROF_20260605170714_RYQFPTCBYWBFCNBI --model matmul --scenario m4096
  npuwatch baseline list

  # when performance drops, compare against it
  npuwatch baseline compare ./prof --against 2025-03-01_llama2-7b_pretrain-bs8
  npuwatch baseline compare ./prof --against 2025-03-01_llama   # a unique prefix is enough
  npuwatch baseline compare ./prof --against latest --model llama2-7b --scenario pretrain-bs8
  npuwatch baseline compare ./prof --against 2025-03-01_llama --by type --top 10

  # msOpProf: a kernel that turns memory-bound, or loses 5 points of AI Core utilisation, fails
  npuwatch baseline compare ./OPPROF_20260606091500_QWERTYUIOPASDFGH --against latest \\
      --model matmul --scenario m4096 --figure-threshold 5
  npuwatch baseline compare ./OPPROF_x --against latest --json | jq '.opprof_figures.operators[]'

  # CI: fail the job (exit 1) when an operator is more than 5% slower per launch
  npuwatch baseline compare "$PROF_DIR" --against latest --model llama2-7b \\
      --scenario pretrain-bs8 --threshold 5% --min-time-us 500 --csv > op_diff.csv
  npuwatch baseline compare "$PROF_DIR" --against "$BASELINE" --json \\
      | jq -r '.operators[] | select(.gates) | "\\(.op_name) \\(.delta_avg_pct)%"'

  # the archive is plain CSV: npuwatch grep or any other tool reads it
  npuwatch grep --baseline -i 'matmul'
  rg MatMulV2 ~/.local/share/npuwatch/archive/baselines/*/op_summary.csv

PROF_DIR is what torch_npu or msprof wrote: a PROF_* folder, an *_ascend_pt folder, its
ASCEND_PROFILER_OUTPUT, or a folder holding several (one per rank). All ranks are added up into
one operator table; each rank's table is kept too. It may also be msOpProf output (msprof op:
an OPPROF_* folder, or the folder holding several): each operator's launches and Task Duration
make the table, so a kernel change that slows an operator fails compare; baseline.json keeps
each operator's bound and key figures (of its longest launch), and when both sides are msOpProf
compare shows them before → now in a section "msOpProf key figures": the bound, AI Core
utilisation, bandwidth use and copy share, with deltas in percentage points.

{layout}

{names}

compare: an operator is slower or faster when its average time per launch moved by more than
the threshold (robust to profiles of different lengths), unchanged otherwise, appeared or
disappeared when only one side has it. Launch counts are shown, never judged alone. Rows are
sorted by the change of total time. Communication kernels are often named with a sequence
number (hcom_allReduce__501_0_1) that differs between runs: --by type matches them.

exit status: add and list 0, or 2 for bad usage or input; compare 0 when nothing regressed,
1 when an operator with at least --min-time-us of baseline time is slower per launch by more
than the threshold, or the total operator time (per step of one rank when both profiles have
steps) is, or (msOpProf) an operator stopped being compute-bound (compute-bound (cube) ->
memory-bound (MTE2)) or its AI Core utilisation fell by more than --figure-threshold points, 2
for bad usage or input (an unknown baseline, a folder without a profile). A baseline stored
before the key figures were kept compares on times only.
"""


def add_baseline_commands(commands: Any) -> None:
    layout = (
        f"archive: --archive DIR, else {ARCHIVE_RULE}. Each baseline is a folder "
        f"<archive>/baselines/<name>/ with op_summary.csv (header {OPERATORS_HEADER}), "
        "ranks/*.csv and baseline.json (source, CANN and torch_npu versions, host, creation "
        "time, ranks, steps, total time). Writes are atomic: a hidden folder renamed into place."
    )
    epilog = _EXAMPLES.format(layout=_wrapped(layout), names=_wrapped(f"names: {NAME_RULE}."))
    baseline = commands.add_parser(
        "baseline",
        help="keep operator tables of profiles as baselines, and compare a profile against one",
        description="A library of profiling baselines (plain CSV) to catch performance "
        "regressions, operator by operator.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = baseline.add_subparsers(title="actions", metavar="ACTION", required=True)
    _add_add(actions, epilog)
    _add_list(actions, epilog)
    _add_compare(actions, epilog)


def _wrapped(paragraph: str) -> str:
    return textwrap.fill(paragraph, width=_WIDTH, break_on_hyphens=False)


def _action(actions: Any, name: str, help_text: str, epilog: str) -> Any:
    return actions.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _archive(action: Any) -> None:
    action.add_argument(
        "--archive", type=Path, metavar="DIR", help=f"the archive folder (default: {ARCHIVE_RULE})"
    )


def _add_add(actions: Any, epilog: str) -> None:
    add = _action(actions, "add", "store the operator table of a profile as a baseline", epilog)
    add.add_argument("prof_dir", type=Path, metavar="PROF_DIR", help="the profile to keep")
    add.add_argument(
        "--model", required=True, metavar="M", help="the model profiled (llama2-7b, resnet50)"
    )
    add.add_argument(
        "--scenario",
        required=True,
        metavar="S",
        help="what it ran (pretrain-bs8, infer-b1); model and scenario are made safe for a "
        "folder name: lower case, runs of other characters than a-z 0-9 . - become one -",
    )
    add.add_argument(
        "--date", metavar="YYYY-MM-DD", help="the date in the name (default: today, local time)"
    )
    add.add_argument("--force", action="store_true", help="replace a baseline of the same name")
    _archive(add)
    add.set_defaults(handler="npuwatch.commands.baseline_run:run_add")


def _add_list(actions: Any, epilog: str) -> None:
    listed = _action(actions, "list", "list the stored baselines, oldest first", epilog)
    listed.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    _archive(listed)
    listed.set_defaults(handler="npuwatch.commands.baseline_run:run_list")


def _add_compare(actions: Any, epilog: str) -> None:
    compare = _action(actions, "compare", "compare a profile against a baseline", epilog)
    compare.add_argument("prof_dir", type=Path, metavar="PROF_DIR", help="the profile to check")
    compare.add_argument(
        "--against",
        required=True,
        metavar="NAME",
        help="the baseline: its name, a unique beginning of it, or latest (the newest; of "
        "--model and --scenario when given)",
    )
    compare.add_argument("--model", metavar="M", help="with --against latest: of this model")
    compare.add_argument("--scenario", metavar="S", help="with --against latest: this scenario")
    compare.add_argument(
        "--threshold",
        default=DEFAULT_THRESHOLD,
        metavar="PCT",
        help="how much slower is a regression: "
        + THRESHOLD_RULE.replace("%", "%%")
        + " (default: %(default)s)",
    )
    compare.add_argument(
        "--by",
        choices=(BY_NAME, BY_TYPE),
        default=BY_NAME,
        help="compare each operator (op_name, op_type, task_type), or each op_type with all "
        "its kernels added up (default: %(default)s)",
    )
    compare.add_argument(
        "--min-time-us",
        type=float,
        default=DEFAULT_MIN_TIME_US,
        metavar="US",
        help="a slower operator fails the gate only with at least this much baseline total "
        "time, in µs (default: %(default)g)",
    )
    compare.add_argument(
        "--figure-threshold",
        default=f"{DEFAULT_FIGURE_THRESHOLD_PP:g}",
        metavar="PP",
        help="msOpProf: the fall of AI Core utilisation that fails the gate, in "
        + FIGURE_THRESHOLD_RULE.replace("%", "%%")
        + "; a kernel that stops being compute-bound always fails (default: %(default)s)",
    )
    compare.add_argument(
        "--top",
        type=count_or_zero,
        metavar="N",
        help="show the N biggest changes (default: 20 in the table, all in --json and --csv; "
        "0 for all); the gate always looks at every operator",
    )
    formats = compare.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    formats.add_argument(
        "--csv",
        action="store_true",
        help="CSV, one row per operator (msOpProf: its key figures in columns after the times)",
    )
    _archive(compare)
    compare.set_defaults(handler="npuwatch.commands.baseline_run:run_compare")
