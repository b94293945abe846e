"""The chart of `npuwatch profile summary --plot FILE.png`: top operators, and the step of each
rank split into its parts.

matplotlib is an optional dependency (`pip install 'npuwatch[plot]'`), imported by this module
only, which only `--plot` imports. The figure is drawn on the Agg canvas directly, without
pyplot, so no window, no global backend switch and no state left behind.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npuwatch.profiling.summary import ProfileSummary
from npuwatch.profiling.text import shorten

_LABEL_WIDTH = 40
_PARTS = (
    ("computing_us", "computing", "#4c72b0"),
    ("communication_not_overlapped_us", "communication not overlapped", "#dd8452"),
    ("free_us", "free", "#8c8c8c"),
)


def write_plot(summary: ProfileSummary, path: Path) -> None:
    """Write the chart as a PNG to `path` (OSError when it cannot be written)."""
    panels = 2 if summary.steps else 1
    figure = Figure(figsize=(11, 4.5 * panels), layout="constrained")
    FigureCanvasAgg(figure)
    axes: list[Axes] = list(figure.subplots(panels, 1, squeeze=False)[:, 0])
    _operators(summary, axes[0])
    if summary.steps:
        _steps(summary, axes[1])
    figure.suptitle(f"npuwatch profile summary of {summary.root}", fontsize=11)
    figure.savefig(path, format="png", dpi=100)


def _operators(summary: ProfileSummary, ax: Axes) -> None:
    rows = list(reversed(summary.by_time))
    labels = [shorten(f"{row.op_name} ({row.task_type})", _LABEL_WIDTH) for row in rows]
    values = [row.total_us / 1000 for row in rows]
    ax.barh(labels, values, color="#4c72b0")
    for position, row in enumerate(rows):
        ax.annotate(
            f" {row.share_pct:.1f}%",
            (values[position], position),
            va="center",
            fontsize=8,
        )
    ax.set_xlabel("total device time (ms)")
    ax.set_title(f"Top {len(rows)} operators by total time", fontsize=10)
    ax.tick_params(axis="y", labelsize=8)


def _steps(summary: ProfileSummary, ax: Axes) -> None:
    labels = [rank.label for rank in summary.steps]
    split = any(rank.computing_us is not None for rank in summary.steps)
    if not split:
        ax.bar(labels, [rank.step_us / 1000 for rank in summary.steps], color="#4c72b0")
    else:
        bottom = [0.0] * len(labels)
        for field, name, colour in _PARTS:
            values = [(getattr(rank, field) or 0.0) / 1000 for rank in summary.steps]
            ax.bar(labels, values, bottom=bottom, label=name, color=colour)
            bottom = [low + value for low, value in zip(bottom, values, strict=True)]
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    title = "Mean step time per rank"
    if summary.spread is not None:
        title += f" (spread {summary.spread.spread_pct:.1f}%)"
    ax.set_title(title, fontsize=10)
    ax.set_ylabel("ms")
