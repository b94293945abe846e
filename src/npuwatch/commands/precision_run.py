"""`npuwatch precision summary`: find and read the results, judge, print (and draw)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.report_output import draw, matplotlib_missing, print_report
from npuwatch.debug_tools.precision.files import FILE_NAMES, read_precision_inputs
from npuwatch.debug_tools.precision.judge import Thresholds
from npuwatch.debug_tools.precision.summary import PrecisionSummary, summarise_precision
from npuwatch.debug_tools.precision.text import render_precision_summary


def run_summary(args: argparse.Namespace) -> int:
    root = Path(args.path)
    if not root.exists():
        fail(f"{root} does not exist: give a precision result file or the folder holding them")
    if not os.access(root, os.R_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns the results)")
    plot = _plotter() if args.plot else None
    inputs = read_precision_inputs(root)
    if not inputs.files:
        fail(f"no precision result in {root}: expected {FILE_NAMES}")
    if not inputs.has_data:
        first = inputs.problems[0] if inputs.problems else "no rows"
        fail(f"{inputs.files} precision file(s) in {root} but nothing readable ({first})")
    summary = summarise_precision(inputs, _thresholds(args), top=args.top)
    if plot is not None:
        draw(lambda path: plot(summary, path), args.plot)
    print_report(
        summary.to_dict, lambda palette: render_precision_summary(summary, palette), args.json
    )
    return EXIT_FINDINGS if summary.findings else EXIT_OK


def _thresholds(args: argparse.Namespace) -> Thresholds:
    """The defaults, with the user's overrides; any override re-judges every tensor."""
    given = {
        name: getattr(args, name)
        for name in ("cosine", "atol", "rtol", "thousandth")
        if getattr(args, name) is not None
    }
    return Thresholds(**given, rejudge=bool(given))


def _plotter() -> Callable[[PrecisionSummary, Path], None]:
    """The chart writer, or a usage error when matplotlib is not installed."""
    try:
        from npuwatch.debug_tools.precision.plot import write_plot  # noqa: PLC0415 - only for --plot
    except ImportError:
        matplotlib_missing()
    return write_plot
