"""The files of an msOpProf result folder: listed, and read as CSV rows with their line numbers.

Every CSV msOpProf writes, the on-board metric CSVs and the simulator's hotspot CSVs alike,
ends each line with a comma and writes empty cells as `NA` (older builds `N/A`); reading them
into a header and rows, and a cell into a number, is the same for both, so it lives here, apart
from what either kind of CSV means (`read_metrics`, `read_simulator`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from npuwatch.parsers.problem_list import ProblemList
from npuwatch.parsers.table_numbers import usable_cell
from npuwatch.untrusted_files import read_file

EMPTY_CELLS = frozenset({"", "NA", "N/A"})


def listing(folder: Path) -> list[Path]:
    """The entries of `folder`, sorted; empty when it cannot be listed."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


@dataclass
class OpProfCsv:
    """A CSV's header (trailing empty cell dropped) and its rows with their line numbers."""

    file: str
    header: list[str]
    rows: list[tuple[int, list[str]]]


def read_opprof_csv(path: Path, problems: list[str]) -> OpProfCsv:
    """The header and the well-formed rows of one CSV; the others, and an unreadable or empty
    file, are added to `problems`."""
    listed = ProblemList(str(path))
    rows = OpProfCsv(str(path), [], [])
    try:
        text = read_file(path).decode("utf-8-sig", errors="replace")
    except OSError as failure:
        problems.append(f"{path}: cannot read ({failure.strerror or failure})")
        return rows
    try:
        for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
            if not row or row == [""]:
                continue
            if not rows.header:
                # Every line of an on-board CSV ends in a comma: an empty last cell.
                rows.header = [cell.strip() for cell in (row[:-1] if row[-1] == "" else row)]
                continue
            if len(row) == len(rows.header) + 1 and row[-1] == "":
                row = row[:-1]
            if len(row) == len(rows.header):
                rows.rows.append((number, [cell.strip() for cell in row]))
            else:
                listed.add(
                    number, f"{len(row)} fields where the header has {len(rows.header)}; skipped"
                )
    except csv.Error as failure:
        listed.add(0, f"unreadable CSV ({failure}); rest of the file skipped")
    if not rows.header:
        listed.add(1, "empty file")
    problems.extend(listed.finish())
    return rows


def cell_number(text: str) -> float | None:
    """A cell as a float; None for NA, N/A, empty or anything that is not a finite number."""
    if text in EMPTY_CELLS:
        return None
    return usable_cell(text)
