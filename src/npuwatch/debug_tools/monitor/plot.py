"""The chart of `npuwatch monitor summary --plot FILE.png`: one statistic over the steps.

One line per rank (the statistic summed in quadrature over the parameters for norms, the
largest |value| for the other ops), or, for a single rank, one line per parameter for the few
with the largest values. msprobe's alerts are marked with triangles and the steps with a NaN or
inf value with red lines. Norms span decades around a spike, so the y axis is logarithmic when
every value is positive.

matplotlib is an optional dependency (`pip install 'npuwatch[plot]'`), imported by this module
only, which only `--plot` imports. The figure is drawn on the Agg canvas directly, without
pyplot, so no window, no global backend switch and no state left behind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from npuwatch.debug_tools.monitor.read import MonitorRun, StatisticsTable
from npuwatch.debug_tools.monitor.summary import MonitorSummary, rank_label

PARAMETER_LINES = 6
"""Parameters drawn for a single rank: the ones with the largest values."""


def write_plot(run: MonitorRun, summary: MonitorSummary, metric: str, path: Path) -> None:
    """Write the chart as a PNG to `path` (OSError when it cannot be written, ValueError when
    no table has the metric)."""
    data_type, op = _choose(run, metric)
    tables = [t for t in run.tables if t.data_type == data_type and op in t.ops]
    figure = Figure(figsize=(11, 5), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    positive = True
    if len(tables) == 1:
        lines = _per_parameter(tables[0], op)
        subject = f"{rank_label(tables[0].rank)}, top {len(lines)} by value"
    else:
        lines = [(rank_label(table.rank), _per_step(table, op)) for table in tables]
        subject = "per rank, over the parameters" + (" (√Σ norm²)" if op == "norm" else " (max)")
    for label, series in lines:
        finite = series[np.isfinite(series)]
        positive = positive and bool((finite > 0).all())
        ax.plot(series.index, series.to_numpy(), label=label, linewidth=1.2)
    bad_steps = sorted(
        {step for group in summary.nans if group.data_type == data_type for step in group.steps}
    )
    for step in bad_steps:
        ax.axvline(step, color="#d62728", linestyle="--", linewidth=1, alpha=0.7)
    if bad_steps:
        ax.plot([], [], color="#d62728", linestyle="--", label="NaN/inf step")
    alerts = [a for a in run.anomalies if a.data_type == data_type]
    if alerts:
        top = ax.get_ylim()[1]
        ax.scatter(
            [a.step for a in alerts],
            [top] * len(alerts),
            marker="v",
            color="black",
            zorder=3,
            label="msprobe alert",
            clip_on=False,
        )
    if positive:
        ax.set_yscale("log")
        # plain numbers (0.5, 2) read better than 5×10⁻¹ on a range of a few decades
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.set_xlabel("step")
    ax.set_ylabel(f"{op}" + (" (log scale)" if positive else ""))
    ax.set_title(f"{data_type} {op}, {subject}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    figure.suptitle(f"npuwatch monitor summary of {summary.root}", fontsize=11)
    figure.savefig(path, format="png", dpi=100)


def _choose(run: MonitorRun, metric: str) -> tuple[str, str]:
    """(data type, op) of `[TYPE:]OP`; without a type, grad_reduced if it has the op, else
    the first data type that has it."""
    wanted_type, _, op = metric.rpartition(":")
    having = [t.data_type for t in run.tables if op in t.ops]
    if wanted_type:
        if wanted_type in having:
            return wanted_type, op
        if metric != "grad_reduced:norm":
            raise ValueError(f"no {wanted_type} table has the op {op!r}: {_offer(run)}")
    for preferred in ("grad_reduced", *having):
        if preferred in having:
            return preferred, op
    if run.tables:
        first = run.tables[0]
        if metric == "grad_reduced:norm":
            return first.data_type, first.ops[0]
    raise ValueError(f"no statistics table has the op {op!r} to plot: {_offer(run)}")


def _offer(run: MonitorRun) -> str:
    choices = sorted({f"{t.data_type}:{op}" for t in run.tables for op in t.ops})
    return "choose --metric among " + ", ".join(choices) if choices else "no statistics at all"


def _per_step(table: StatisticsTable, op: str) -> pd.Series:
    steps = table.frame["step"]
    values = table.frame[op]
    if op == "norm":
        total: pd.Series = np.sqrt((values**2).groupby(steps).sum())
        return total
    return values.abs().groupby(steps).max()


def _per_parameter(table: StatisticsTable, op: str) -> list[tuple[str, pd.Series]]:
    frame = table.frame[["name", "step", op]]
    by_step = frame.groupby(["name", "step"], observed=True)[op].max().unstack("name")
    order = by_step.abs().median().sort_values(ascending=False).index[:PARAMETER_LINES]
    return [(str(name), by_step[name]) for name in order]
