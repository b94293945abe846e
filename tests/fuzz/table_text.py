"""Tables (CSV) as tools write them when something went wrong or someone edited them: cells with
non-finite or oversized numbers, torn rows, bytes that are not UTF-8; and the accounting a
table reader owes, every data row either read or named in a problem."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

from hypothesis import strategies as st

from tests.fuzz.log_text import MUTATIONS

HOSTILE_CELLS = (
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    "1e400",
    "-1e400",
    "1e308",
    "18446744073709551616",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999999999999999",
    "-1",
    "0",
    "",
    "N/A",
    "-",
    "0x10",
    "1,5",
    '"',
    "\x00",
    "\x1b]52;c;ZXZpbA==\x07",
    "中文",
)


@st.composite
def mutated_table(draw: st.DrawFn, text: str, header_lines: int = 1) -> str:
    """`text` with one to three of its data rows changed: a cell given a hostile value, or the
    row's bytes mutated (decoded back with replacement, as the readers decode)."""
    lines = text.split("\n")
    data_lines = [i for i in range(header_lines, len(lines)) if lines[i].strip()]
    if not data_lines:
        return text
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from(data_lines))
        if draw(st.booleans()):
            cells = lines[at].split(",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(HOSTILE_CELLS))
            lines[at] = ",".join(cells)
        else:
            raw = draw(st.sampled_from(MUTATIONS))(draw, lines[at].encode())
            lines[at] = raw.decode("utf-8", "replace")
    return "\n".join(lines)


def data_rows(text: str, header_lines: int = 1) -> int:
    """The data rows of a CSV text as the csv module reads them (blank rows do not count)."""
    rows = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), skipinitialspace=True)
    return max(sum(1 for row in rows if any(cell.strip() for cell in row)) - header_lines, 0)


def problem_lines(problems: Sequence[str], source: str) -> set[int] | None:
    """The lines the problems of one file name, or None when one of them is about the whole
    file (no line, or more problems than were listed)."""
    lines: set[int] = set()
    for problem in problems:
        if not problem.startswith(f"{source}:"):
            continue
        match = re.match(r"(\d+): ", problem[len(source) + 1 :])
        if match is None:
            return None
        lines.add(int(match[1]))
    return lines
