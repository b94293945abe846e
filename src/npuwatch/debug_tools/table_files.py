"""The rows of a debugging tool's .csv or .xlsx file, with the line or row each starts on.

msprobe, msit, the API accuracy checker and the training monitor write their tables as CSV
(UTF-8, sometimes GB18030 from Chinese Windows tools) or as .xlsx workbooks; every reader of
this package needs the same "rows with their numbers, nothing raised" step before it looks at
a single cell, so it lives here, apart from what any one kind of file means. python-calamine is
imported only when an .xlsx is read.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from npuwatch.parsers.problem_list import ProblemList
from npuwatch.untrusted_files import open_binary, read_file


def read_table(path: Path, problems: ProblemList) -> list[tuple[int, list[Any]]]:
    """The rows of a .csv or the first sheet of an .xlsx as (row number, cells), header first;
    empty when unreadable (the reason is added to `problems`)."""
    if is_xlsx(path):
        sheets = read_workbook(path, problems)
        return next(iter(sheets.values()), [])
    try:
        data = read_file(path)
    except OSError as failure:
        problems.add(0, f"cannot read: {failure.strerror or failure}")
        return []
    return csv_rows(decode(data), problems)


def is_xlsx(path: Path) -> bool:
    return path.suffix.lower() == ".xlsx"


def decode(data: bytes) -> str:
    """UTF-8 (with or without a BOM), else GB18030 as Chinese Windows tools write it."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def csv_rows(text: str, problems: ProblemList) -> list[tuple[int, list[Any]]]:
    """Non-blank CSV rows with the line each starts on; a CSV syntax error ends the file."""
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.reader(lines)
    rows: list[tuple[int, list[Any]]] = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as failure:
            problems.add(start, f"unreadable CSV ({failure}); rest of the file skipped")
            break
        if any(cell.strip() for cell in row):
            rows.append((start, row))
    return rows


def read_workbook(path: Path, problems: ProblemList) -> dict[str, list[tuple[int, list[Any]]]]:
    """Every sheet of an .xlsx as its non-blank rows; empty when the file is not a workbook."""
    # python-calamine (Rust) reads a 50,000-row compare result in about 1 s where openpyxl
    # takes 15 s (bench/precision_bench.py); msprobe writes .xlsx by default.
    from python_calamine import CalamineWorkbook  # noqa: PLC0415 - .xlsx only

    try:
        handle = open_binary(path)
    except OSError as failure:
        problems.add(0, f"cannot read: {failure.strerror or failure}")
        return {}
    try:
        with handle:  # calamine reads the whole workbook from it at once
            book = CalamineWorkbook.from_filelike(handle)
    except Exception as failure:  # calamine raises its own kinds on a damaged file
        problems.add(0, f"not a readable .xlsx workbook ({type(failure).__name__}: {failure})")
        return {}
    sheets: dict[str, list[tuple[int, list[Any]]]] = {}
    try:
        for name in book.sheet_names:
            # skip_empty_area=False keeps row numbers those of the sheet (1 = the first row).
            cells = book.get_sheet_by_name(name).to_python(skip_empty_area=False)
            sheets[name] = [
                (number_, [None if cell == "" else cell for cell in row])
                for number_, row in enumerate(cells, start=1)
                if any(cell is not None and str(cell).strip() for cell in row)
            ]
    except Exception as failure:  # a truncated sheet fails while it is read
        problems.add(0, f"damaged .xlsx workbook ({type(failure).__name__}: {failure})")
        return {}
    finally:
        book.close()
    return sheets
