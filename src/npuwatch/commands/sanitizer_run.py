"""`npuwatch sanitizer summary`: find the reports and msaicerr outputs, summarise, print."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.report_output import print_report
from npuwatch.debug_tools.sanitizer.sources import SanitizerInputs, read_sanitizer_inputs
from npuwatch.debug_tools.sanitizer.summary import summarise_sanitizer
from npuwatch.debug_tools.sanitizer.text import render_sanitizer_summary

WHAT_TO_GIVE = (
    "give an msSanitizer report (the output of mssanitizer ... <app>), an msaicerr info_* or "
    "-out folder, or a folder holding them"
)


def run_summary(args: argparse.Namespace) -> int:
    root = Path(args.path)
    inputs = _read(root)
    summary = summarise_sanitizer(
        inputs.reports, inputs.msaicerr, root=str(root), top=args.top, problems=inputs.problems
    )
    print_report(
        summary.to_dict, lambda palette: render_sanitizer_summary(summary, palette), args.json
    )
    return EXIT_FINDINGS if summary.has_findings else EXIT_OK


def _read(root: Path) -> SanitizerInputs:
    """What is at `root`, or one error line and exit 2 when there is nothing to summarise."""
    if not root.exists():
        fail(f"{root} does not exist: {WHAT_TO_GIVE}")
    if not os.access(root, os.R_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns it)")
    inputs = read_sanitizer_inputs(root)
    if not inputs.reports and not inputs.msaicerr and root.is_file():
        fail(
            f"{root} holds no msSanitizer record (no `====== ERROR:`/`WARNING:` line nor the "
            f"`Start detect for` banner) and is no msaicerr file: {WHAT_TO_GIVE}"
        )
    if not inputs.reports and not inputs.msaicerr:
        fail(
            f"no msSanitizer report and no msaicerr info_* folder in {root} "
            f"({inputs.files_seen} files looked at): {WHAT_TO_GIVE}"
        )
    return inputs
