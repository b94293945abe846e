"""Splitting a CSV text into its header and its well-formed rows, keeping their line numbers.

The csv module walks the text once and finds each row's fields (quoted commas and line breaks
included); a row whose field count differs from the header's is reported and dropped. What
stays is the original text of the good rows, for pandas' C parser to convert in one go, and the
line where each of them starts, for the problems found later. Blank lines are skipped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from npuwatch.parsers.problem_list import ProblemList


@dataclass
class CsvRows:
    """The header cells, and the text and first line number of every well-formed row."""

    header: list[str] | None = None
    header_line: int = 0
    body: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def split_rows(text: str, problems: ProblemList) -> CsvRows:
    """The header and the rows with as many fields as it; the others become problems."""
    # The physical lines as the csv module splits them (\n, \r, \r\n), at C speed; a row that
    # spans several (a quoted line break) is the lines its reader consumed.
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.reader(lines, skipinitialspace=True)
    rows = CsvRows()
    consumed = 0
    while True:
        first_line = consumed + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as failure:
            problems.add(first_line, f"unreadable CSV ({failure}); rest of the file skipped")
            break
        end = reader.line_num
        raw = lines[consumed] if end == first_line else "".join(lines[consumed:end])
        consumed = end
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if rows.header is None:
            rows.header, rows.header_line = row, first_line
        elif len(row) == len(rows.header):
            rows.body.append(raw if raw.endswith(("\n", "\r")) else raw + "\n")
            rows.lines.append(first_line)
        else:
            problems.add(
                first_line,
                f"{len(row)} fields where the header has {len(rows.header)}; row skipped",
            )
    return rows


def parse_rows(body: str) -> list[list[str]]:
    """The fields of rows already known to be well formed (the fallback when pandas' parser
    reads them differently from the csv module)."""
    return list(csv.reader(io.StringIO(body, newline=""), skipinitialspace=True))
