"""Finding msSanitizer reports and msaicerr outputs under a path, and reading them.

A path may be one report file, msaicerr's info_* folder (or a file in it), the -out folder that
holds info_* folders, or any folder searched recursively: an info_* folder is read as msaicerr
output, any other text file that holds msSanitizer's markers as a report (application logs,
--log-file files, mindstudio_sanitizer_log/mssanitizer_*.log). Binary files (kernel.*.o, dumps)
and files larger than MAX_REPORT_BYTES are passed over.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.debug_tools.sanitizer.read import looks_like_report, parse_sanitizer_text
from npuwatch.debug_tools.sanitizer.read_msaicerr import (
    MsaicerrOutput,
    is_msaicerr_output,
    read_msaicerr_output,
)
from npuwatch.debug_tools.sanitizer.read_records import SanitizerReport
from npuwatch.tree_walk import WalkProblem, walk_folders
from npuwatch.untrusted_files import read_file

MAX_REPORT_BYTES = 512 * 1024 * 1024
_SNIFF_BYTES = 4096


@dataclass
class SanitizerInputs:
    """The reports and msaicerr outputs found under one path, and what could not be read."""

    reports: list[SanitizerReport] = field(default_factory=list)
    msaicerr: list[MsaicerrOutput] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files_seen: int = 0


def read_sanitizer_inputs(root: Path) -> SanitizerInputs:
    """Everything recognisable at `root`; names are relative to a folder `root`."""
    found = SanitizerInputs()
    if root.is_file():
        if root.name in {"README.txt", "info.txt", "debug_info.txt"}:
            info = next(
                (p for p in (root.parent, root.parent.parent) if is_msaicerr_output(p)), None
            )
            if info is not None:
                found.msaicerr.append(read_msaicerr_output(info))
                return found
        found.files_seen = 1
        _read_report(root, str(root), found, explicit=True)
        return found
    if is_msaicerr_output(root):
        found.msaicerr.append(read_msaicerr_output(root))
        return found
    for path in _walk(root, found):
        name = str(path.relative_to(root))
        if path.is_dir():
            found.msaicerr.append(read_msaicerr_output(path, name))
        else:
            found.files_seen += 1
            _read_report(path, name, found, explicit=False)
    return found


def _walk(root: Path, found: SanitizerInputs) -> Iterator[Path]:
    """msaicerr folders (not entered) and files below `root`, in name order."""

    problems: list[WalkProblem] = []
    for folder, subfolders, files in walk_folders(str(root), problems):
        for problem in problems:
            if problem.reason == "unreadable":
                found.problems.append(f"{problem.path}:0: cannot list: {problem.problem}")
        problems.clear()
        here = Path(folder)
        for name in list(subfolders):
            if is_msaicerr_output(here / name):
                subfolders.remove(name)
                yield here / name
        for name in sorted(files):
            yield here / name


def _read_report(path: Path, name: str, found: SanitizerInputs, *, explicit: bool) -> None:
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            if explicit:
                found.problems.append(f"{name}:0: larger than 512 MiB; not read")
            return
        data = read_file(path, named=explicit)
    except OSError as failure:
        found.problems.append(f"{name}:0: cannot read: {failure.strerror}")
        return
    if b"\0" in data[:_SNIFF_BYTES] or not looks_like_report(data):
        return
    report = parse_sanitizer_text(data.decode("utf-8", errors="replace"), name)
    if report.records:  # markers alone (a script or a doc that quotes them) are no report
        found.reports.append(report)
