"""Arguments of `npuwatch sanitizer` (handler: sanitizer_run)."""

from __future__ import annotations

import argparse
from typing import Any

from npuwatch.commands.argument_types import positive_int

_EXAMPLES = """\
examples:
  mssanitizer --tool=memcheck ./add_custom_npu > memcheck.log 2>&1
  npuwatch sanitizer summary memcheck.log
  npuwatch sanitizer summary ./kernel_tests          # every report and info_* folder below it
  npuwatch sanitizer summary ./msaicerr_out          # msaicerr's -out folder (info_*/ inside)
  npuwatch sanitizer summary ./msaicerr_out/info_20260415111938
  npuwatch sanitizer summary ./kernel_tests --top 5
  npuwatch sanitizer summary memcheck.log --json | jq '.groups[] | {kind, kernel, count, code}'

PATH is an msSanitizer report (what mssanitizer --tool=memcheck|racecheck|initcheck|synccheck
printed, captured from stdout or written by --log-file, or mindstudio_sanitizer_log/
mssanitizer_*.log), an msaicerr output folder info_<timestamp>/ (README.txt, one folder per
analysed error with info.txt, debug_info.txt) or the -out folder that holds it, or any folder:
it is searched recursively, every text file with msSanitizer's `======` records is read as a
report, every info_* folder as msaicerr output. The application's own prints between the
records, pasted reports (leading blanks), CRLF and a report cut short are fine.

The report: for each report, its errors and warnings and the kernels checked; msSanitizer's
records grouped by kind and kernel (illegal read/write, misaligned access, uninitialized read,
out of bounds, illegal free, leaks, unused memory, internal errors, RAW/WAR/WAW race hazards
with their two pipe events, unpaired/redundant set_flag/wait_flag, registers not reset) with
the count, memory spaces, bytes, devices and blocks, the first record with its call stack (the
frame in the kernel's own source marked), and advice for the kind; the leak totals beside the
report's SUMMARY; every AI Core error msaicerr analysed with its conclusion, kernel, device,
core, error code, pcs, the single-operator test result and advice; the problems met while
reading (lines not understood, records cut short).

exit status: 0 no errors (warnings alone, such as out of bounds, unused memory or unpaired
set_flag, are listed but are not findings), 1 at least one ERROR record or one AI Core error
from msaicerr, 2 bad usage, a missing path, or nothing recognisable in it.
"""


def add_sanitizer_commands(commands: Any) -> None:
    sanitizer = commands.add_parser(
        "sanitizer",
        help="summarise msSanitizer reports and msaicerr AI Core error analyses",
        description="Read the reports of msSanitizer (memcheck, racecheck, initcheck, "
        "synccheck) and msaicerr's analyses of AI Core errors.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = sanitizer.add_subparsers(title="actions", metavar="ACTION", required=True)
    summary = actions.add_parser(
        "summary",
        help="the errors by kind and kernel, where they are, and what to do",
        description="Summarise msSanitizer reports and msaicerr outputs: errors and warnings "
        "grouped by kind and kernel with the first one's stack and advice, leaks, and the AI "
        "Core errors msaicerr analysed.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument(
        "path",
        metavar="PATH",
        help="a report file, an msaicerr info_* or -out folder, or a folder holding them",
    )
    summary.add_argument(
        "--top",
        type=positive_int,
        default=20,
        metavar="N",
        help="groups of errors and warnings listed (default: 20)",
    )
    summary.add_argument("--json", action="store_true", help="print one JSON document")
    summary.set_defaults(handler="npuwatch.commands.sanitizer_run:run_summary")
