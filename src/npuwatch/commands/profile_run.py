"""`npuwatch profile summary`: read the runs, summarise, print (and draw).

msOpProf output (OPPROF_*) is another kind of run, with its own summary and report: it is
recognised first, by its folder name, and the msprof/torch_npu path does not see it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.profile_input import (
    is_opprof_input,
    read_opprof_folder,
    read_profile_folder,
)
from npuwatch.commands.report_output import draw, matplotlib_missing, print_report
from npuwatch.profiling.summary import ProfileSummary, summarise_profiles
from npuwatch.profiling.text import render_profile_summary

if TYPE_CHECKING:
    from npuwatch.profiling.opprof.summary import OpProfSummary


def run_summary(args: argparse.Namespace) -> int:
    root = Path(args.path)
    if is_opprof_input(root):
        return _run_opprof_summary(root, args)
    plot = _plotter() if args.plot else None
    runs = read_profile_folder(root)
    if not any(run.has_data for run in runs):
        first = runs[0].problems[0] if runs[0].problems else "no kernels, statistics or steps"
        fail(f"{len(runs)} run(s) in {root} but nothing to summarise yet ({first})")
    summary = summarise_profiles(runs, root=str(root), top=args.top)
    if plot is not None:
        draw(lambda path: plot(summary, path), args.plot)
    print_report(
        summary.to_dict, lambda palette: render_profile_summary(summary, palette), args.json
    )
    return EXIT_FINDINGS if summary.findings else EXIT_OK


def _run_opprof_summary(root: Path, args: argparse.Namespace) -> int:
    from npuwatch.profiling.opprof.summary import summarise_opprof  # noqa: PLC0415 - msOpProf only
    from npuwatch.profiling.opprof.text import render_opprof_summary  # noqa: PLC0415 - same

    plot = _opprof_plotter() if args.plot else None
    summary = summarise_opprof(read_opprof_folder(root), root=str(root), top=args.top)
    if plot is not None:
        draw(lambda path: plot(summary, path), args.plot)
    print_report(
        summary.to_dict, lambda palette: render_opprof_summary(summary, palette), args.json
    )
    return EXIT_FINDINGS if summary.findings else EXIT_OK


def _opprof_plotter() -> Callable[[OpProfSummary, Path], None]:
    try:
        from npuwatch.profiling.opprof.plot import write_opprof_plot  # noqa: PLC0415 - --plot
    except ImportError:
        matplotlib_missing()
    return write_opprof_plot


def _plotter() -> Callable[[ProfileSummary, Path], None]:
    """The chart writer, or a usage error when matplotlib is not installed."""
    try:
        from npuwatch.profiling.plot import write_plot  # noqa: PLC0415 - only for --plot
    except ImportError:
        matplotlib_missing()
    return write_plot
