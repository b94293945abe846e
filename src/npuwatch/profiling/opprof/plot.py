"""The chart of `npuwatch profile summary OPPROF_… --plot FILE.png`: how busy each pipe of each
launch was (a heat map: where the bound is shows at a glance), and the operators' durations.

matplotlib is optional (`pip install 'npuwatch[plot]'`) and imported by this module only, which
only `--plot` imports; the figure is drawn on the Agg canvas without pyplot.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from npuwatch.profiling.opprof.figures import PIPES
from npuwatch.profiling.opprof.summary import OpProfSummary, launch_title
from npuwatch.profiling.text import shorten

_LABEL_WIDTH = 36


def write_opprof_plot(summary: OpProfSummary, path: Path) -> None:
    """Write the chart as a PNG to `path` (OSError when it cannot be written)."""
    rows = max(len(summary.launches), len(summary.operators[: summary.top]), 2)
    figure = Figure(figsize=(13, 1.5 + 0.45 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    pipes_axes, operators_axes = figure.subplots(1, 2, width_ratios=[1.3, 1])
    _pipes(summary, pipes_axes, figure)
    _operators(summary, operators_axes)
    figure.suptitle(f"npuwatch profile summary of {summary.root} (msOpProf)", fontsize=11)
    figure.savefig(path, format="png", dpi=100)


def _pipes(summary: OpProfSummary, ax: Axes, figure: Figure) -> None:
    launches = summary.launches
    grid = [
        [
            next((share.pct for share in report.figures.pipes if share.name == pipe), float("nan"))
            for pipe in PIPES
        ]
        for report in launches
    ]
    image = ax.imshow(grid, cmap="Oranges", vmin=0, vmax=100, aspect="auto")
    for row, values in enumerate(grid):
        for column, value in enumerate(values):
            if not math.isnan(value):  # the pipe was measured
                colour = "white" if value > 60 else "black"
                ax.text(
                    column, row, f"{value:.0f}", ha="center", va="center", fontsize=8, color=colour
                )
    ax.set_xticks(range(len(PIPES)), list(PIPES), fontsize=8)
    ax.set_yticks(
        range(len(launches)),
        [shorten(launch_title(report), _LABEL_WIDTH) for report in launches],
        fontsize=8,
    )
    ax.set_xlabel("pipe")
    ax.set_title("Pipe busy share of core time (%), longest launches", fontsize=10)
    figure.colorbar(image, ax=ax, label="% of core time", shrink=0.8)


def _operators(summary: OpProfSummary, ax: Axes) -> None:
    operators = list(reversed(summary.operators[: summary.top]))
    labels = [shorten(f"{total.op_name} ×{total.count}", _LABEL_WIDTH) for total in operators]
    ax.barh(labels, [total.total_us for total in operators], color="#4c72b0")
    for position, total in enumerate(operators):
        ax.annotate(f" {total.bound_label}", (total.total_us, position),
                    va="center", fontsize=8)  # fmt: skip
    ax.set_xlabel("total task duration (µs)")
    ax.set_title("Operators by total duration, with their bound", fontsize=10)
    ax.tick_params(axis="y", labelsize=8)
    ax.margins(x=0.45)
