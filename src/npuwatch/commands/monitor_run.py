"""`npuwatch monitor summary`: read the monitor output, summarise, print (and draw)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.report_output import draw, matplotlib_missing, print_report
from npuwatch.debug_tools.monitor.spikes import DEFAULT_OPS, SpikeSettings
from npuwatch.debug_tools.monitor.summary import MonitorSummary, summarise_monitor
from npuwatch.debug_tools.monitor.text import render_monitor_summary

if TYPE_CHECKING:
    from npuwatch.debug_tools.monitor.read import MonitorRun

WHAT_TO_GIVE = "give msprobe monitor's output folder ($MONITOR_OUTPUT_DIR, ./monitor_output)"
_Plotter = Callable[["MonitorRun", MonitorSummary, str, Path], None]


def run_summary(args: argparse.Namespace) -> int:
    from npuwatch.debug_tools.monitor.read import load_monitor  # noqa: PLC0415 - pandas
    from npuwatch.debug_tools.monitor.summary import summarise_monitor_folder  # noqa: PLC0415

    root = Path(args.path)
    plot = _plotter() if args.plot else None
    _check_folder(root)
    settings = SpikeSettings(
        ratio=args.spike_ratio,
        window=args.spike_window,
        ops=tuple(dict.fromkeys(args.spike_op)) if args.spike_op else DEFAULT_OPS,
    )
    if plot is None:  # one file at a time: a long run's rows never sit in memory at once
        summary = summarise_monitor_folder(root, top=args.top, spikes=settings)
    else:  # the chart draws every row of the statistic
        run = load_monitor(root)
        summary = summarise_monitor(run, top=args.top, spikes=settings)
    if not summary.tables and not summary.anomalies and not summary.analysed:
        if summary.problems:
            fail(f"nothing readable in {root}: {summary.problems[0]}")
        fail(
            f"no monitor output in {root}: expected <data type>_<first>-<last>.csv files "
            "(grad_reduced_0-4.csv ...) or anomaly_detected/*.json; the monitor must write "
            'format "csv"'
        )
    if plot is not None:
        draw(lambda path: plot(run, summary, args.metric, path), args.plot)
    print_report(
        summary.to_dict, lambda palette: render_monitor_summary(summary, palette), args.json
    )
    return EXIT_FINDINGS if summary.findings else EXIT_OK


def _check_folder(root: Path) -> None:
    """One error line and exit 2 when `root` is not a folder that can be read."""
    if not root.exists():
        fail(f"monitor folder {root} does not exist: {WHAT_TO_GIVE}")
    if not root.is_dir():
        fail(f"{root} is a file: {WHAT_TO_GIVE}")
    if not os.access(root, os.R_OK | os.X_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns it)")


def _plotter() -> _Plotter:
    """The chart writer, or a usage error when matplotlib is not installed."""
    try:
        from npuwatch.debug_tools.monitor.plot import write_plot  # noqa: PLC0415 - only for --plot
    except ImportError:
        matplotlib_missing()
    return write_plot
