"""Numbers read from a table's cells (CSV columns through pandas), the same way for every reader.

A cell may hold anything a file can: `inf`, `-inf`, `nan`, `1e400`, four hundred digits, 2**70.
None of those is a measurement, a count or an id, so every reader takes a column's numbers
through `numbers_of` and `usable_numbers`: what is not a finite number within 64 bits becomes
NaN, which the reader treats as a malformed cell (skipped or left empty, and named in its
problems), never an exception. pandas is imported here lazily, as by the readers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

LARGEST_MAGNITUDE = 2.0**63
"""Past this no integer column can hold a value, and no duration or count is real."""


def numbers_of(values: pd.Series) -> pd.Series:
    """`pd.to_numeric(values, errors="coerce")`, which raises OverflowError on a cell of a few
    hundred digits: such a cell is read as the float it is (inf) instead."""
    import pandas as pd  # noqa: PLC0415 - lazily, as by every table reader

    try:
        numbers: pd.Series = pd.to_numeric(values, errors="coerce")
    except (OverflowError, ValueError):
        numbers = pd.Series([_float(cell) for cell in values], index=values.index, dtype="float64")
    return numbers


def usable_numbers(numbers: pd.Series) -> pd.Series:
    """`numbers` with every value no measurement can be (inf, -inf, magnitudes past 64-bit
    integers) as NaN, in float64."""
    floats = numbers.astype("float64")
    usable: pd.Series = floats.where(floats.abs() < LARGEST_MAGNITUDE)
    return usable


def usable_cell(value: object) -> float | None:
    """One cell (a JSON number, a text) as a finite float, or None: never an OverflowError for
    an int of 400 digits. (No bound on the magnitude: an error of 1e30 is a real finding.)"""
    number = _float(value)
    return number if math.isfinite(number) else None


def unusable_reason(value: object) -> str:
    """Why a cell that reads as a number is not one a table can use."""
    return "not a finite number" if math.isinf(_float(value)) else "out of range"


def _float(cell: object) -> float:
    if cell is None or isinstance(cell, bool):
        return math.nan
    try:
        return float(cell.strip() if isinstance(cell, str) else cell)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond any float
        return math.inf if cell > 0 else -math.inf  # type: ignore[operator]
    except (TypeError, ValueError):
        return math.nan
