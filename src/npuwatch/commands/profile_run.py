"""`npuwatch profile summary`: read the runs, summarise, print (and draw)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from npuwatch.analysis.profile_summary import ProfileSummary, summarise_profiles
from npuwatch.analysis.profile_text import render_profile_summary
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.profile_input import read_profile_folder
from npuwatch.terminal import Palette, wants_colour


def run_summary(args: argparse.Namespace) -> int:
    root = Path(args.path)
    plot = _plotter() if args.plot else None
    runs = read_profile_folder(root)
    if not any(run.has_data for run in runs):
        first = runs[0].problems[0] if runs[0].problems else "no kernels, statistics or steps"
        fail(f"{len(runs)} run(s) in {root} but nothing to summarise yet ({first})")
    summary = summarise_profiles(runs, root=str(root), top=args.top)
    if plot is not None:
        try:
            plot(summary, Path(args.plot))
        except OSError as failure:
            fail(f"cannot write the plot {args.plot}: {failure.strerror or failure}")
    if args.json:
        json.dump(summary.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_profile_summary(summary, Palette(wants_colour(sys.stdout))))
        sys.stdout.write("\n")
    return EXIT_FINDINGS if summary.findings else EXIT_OK


def _plotter() -> Callable[[ProfileSummary, Path], None]:
    """The chart writer, or a usage error when matplotlib is not installed."""
    try:
        from npuwatch.analysis.profile_plot import write_plot  # noqa: PLC0415 - only for --plot
    except ImportError:
        fail("--plot needs matplotlib: pip install 'npuwatch[plot]'")
    return write_plot
