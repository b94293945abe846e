"""What one cell of a compare or accuracy-check table holds: a number, a text, a verdict.

The tools fill a cell that has no value with many placeholders (`N/A`, `Nan`, `unsupported`,
`No real data`, `inf`, a trailing TAB …), write relative errors in %, end CSV lines with a
comma and leave blank .xlsx cells out. These rules are the same for every compare kind
(msprobe tables, first-mismatch JSON, multi-rank merges, msit results) and for the API
accuracy checker, so they live apart from the readers of each kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from npuwatch.parsers.problem_list import ProblemList
from npuwatch.parsers.table_numbers import usable_cell

PLACEHOLDERS = frozenset(
    {
        "",
        "n/a",
        "na",
        "nan",
        "none",
        "null",
        "-",
        "unsupported",
        "no real data",
        "api unmatched",
        "shape unmatched",
        "no data",
        "different",
        "inf",
        "-inf",
        "+inf",
        "unmatched",
    }
)
"""Cells that hold no number (matched case-insensitively, after trailing TABs are stripped)."""


def number(cell: Any) -> float | None:
    """A cell as a finite float; None for placeholders, text, inf and NaN. `12.5%` → 0.125."""
    if cell is None or isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return usable_cell(cell)  # a JSON int of 400 digits is no float: None, not a raise
    text = str(cell).strip().strip("\t").strip()
    if text.lower() in PLACEHOLDERS:
        return None
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1].strip(), 0.01
    try:
        value = float(text)
    except ValueError:
        return None
    return value * scale if usable_cell(value) is not None else None


def text_of(cell: Any) -> str | None:
    """A cell as stripped text; None when empty or a bare placeholder like `N/A`."""
    if cell is None:
        return None
    text = str(cell).strip().strip("\t").strip()
    return None if text.lower() in {"", "n/a", "nan", "none", "null"} else text


def verdict_of(cell: Any) -> str | None:
    """`pass`/`warning`/`error`/`unmatched` from a Result, Accuracy (Yes/No) or md5 cell."""
    text = text_of(cell)
    if text is None:
        return None
    word = text.lower()
    if word in {"pass", "yes", "true", "same"}:
        return "pass"
    if word in {"error", "no", "false", "different"}:
        return "error"
    if word == "warning":
        return "warning"
    if "unmatch" in word or word in {"no bench data matched.", "no data"}:
        return "unmatched"
    return None


def header_cells(cells: Sequence[Any]) -> list[str]:
    """Header cells as text; trailing empty cells (a trailing comma) dropped."""
    header = ["" if cell is None else str(cell).strip().lstrip("\ufeff") for cell in cells]
    while header and not header[-1]:
        header.pop()
    return header


def fit_row(
    cells: list[Any], width: int, line: int, problems: ProblemList, xlsx: bool
) -> list[Any] | None:
    """`cells` cut to the header's width when only empty cells are beyond it (a trailing
    comma), padded when an .xlsx row stops early (its blank cells are not stored); None, and
    a problem, for a CSV row of another width (a truncated file)."""
    if len(cells) > width and all(c is None or not str(c).strip() for c in cells[width:]):
        return cells[:width]
    if len(cells) == width:
        return cells
    if len(cells) < width and xlsx:
        return [*cells, *([None] * (width - len(cells)))]
    problems.add(line, f"{len(cells)} fields where the header has {width}; row skipped")
    return None


def metrics_of(values: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, float]:
    """The cells of `values` named in `names` (column → key) that hold numbers, by key; the
    first column of a key wins when two spellings of it are present."""
    found: dict[str, float] = {}
    for column, key in names.items():
        value = number(values.get(column))
        if value is not None and key not in found:
            found[key] = value
    return found
