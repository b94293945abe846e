"""The chart of `npuwatch precision summary --plot FILE.png`: the error along the execution order.

One panel per compare result that carries an error metric (MaxAbsErr, else |Max diff| …; at most
MAX_PANELS, the ones with failures first): the headline error of each operator in execution
order on a log scale, failing operators in red, the first failure marked with a dashed line and
the layer where the error starts to grow shaded to the end. matplotlib is optional (`pip install
'npuwatch[plot]'`) and imported by this module only, which only `--plot` imports; the figure is
drawn on the Agg canvas without pyplot, so no window and no global state.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npuwatch.debug_tools.precision.operators import METRIC_LABELS
from npuwatch.debug_tools.precision.summary import Comparison, PrecisionSummary
from npuwatch.debug_tools.precision.text import shorten

MAX_PANELS = 8
_FLOOR = 1e-12
"""Errors of 0 drawn at this value, since a log scale has no 0."""


def write_plot(summary: PrecisionSummary, path: Path) -> None:
    """Write the chart as a PNG to `path` (OSError when it cannot be written)."""
    drawn = [c for c in summary.comparisons if c.error_metric and len(c.operators) > 1]
    drawn.sort(key=lambda c: c.failed == 0)  # stable: the ones with failures first
    shown = drawn[:MAX_PANELS]
    panels = max(len(shown), 1)
    figure = Figure(figsize=(11, 2.8 * panels + 0.6), layout="constrained")
    FigureCanvasAgg(figure)
    axes: list[Axes] = list(figure.subplots(panels, 1, squeeze=False)[:, 0])
    if not shown:
        axes[0].text(0.5, 0.5, "no compare result with an error metric", ha="center")
        axes[0].set_axis_off()
    for comparison, ax in zip(shown, axes, strict=False):
        _panel(comparison, ax)
    title = f"npuwatch precision summary of {summary.root}"
    if len(drawn) > len(shown):
        title += f" ({len(shown)} of {len(drawn)} compare results)"
    figure.suptitle(title, fontsize=11)
    figure.savefig(path, format="png", dpi=100)


def _panel(comparison: Comparison, ax: Axes) -> None:
    points = [
        (op.index, max(op.error, _FLOOR), op) for op in comparison.operators if op.error is not None
    ]
    xs = [x for x, _, _ in points]
    ys = [y for _, y, _ in points]
    ax.plot(xs, ys, color="#4c72b0", linewidth=1.2, marker=".", markersize=4, label="operator")
    failing = [(x, y) for x, y, op in points if op.verdict == "error"]
    if failing:
        ax.scatter(
            [x for x, _ in failing], [y for _, y in failing], color="#c44e52", s=18, zorder=3,
            label="fails",
        )  # fmt: skip
    ax.set_yscale("log")
    start = comparison.error_start
    if start is not None and start.persistent:
        begin = next(
            op.index for op in comparison.operators if op.operator == start.first_failing_operator
        )
        ax.axvspan(begin - 0.5, max(xs) + 0.5, color="#c44e52", alpha=0.08)
        ax.annotate(
            f" error grows from {start.layer} {start.direction or ''}",
            (begin, 1.0), xycoords=("data", "axes fraction"), va="top", fontsize=8, color="#8c1c1c",
        )  # fmt: skip
    if comparison.first_failure is not None:
        failure = comparison.first_failure
        ax.axvline(failure.index, color="#c44e52", linestyle="--", linewidth=1)
        ax.annotate(
            f" first failure #{failure.index} {shorten(failure.operator, 40)}",
            (failure.index, 0.02), xycoords=("data", "axes fraction"), fontsize=8, color="#8c1c1c",
        )  # fmt: skip
    metric = METRIC_LABELS.get(comparison.error_metric or "", comparison.error_metric or "")
    ax.set_ylabel(f"{metric} (log)", fontsize=9)
    ax.set_xlabel("operator in execution order", fontsize=9)
    ax.set_title(f"rank {comparison.rank}  {comparison.source}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="major", alpha=0.3)
