"""Cells of the profiling DataFrames as plain JSON values."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def plain_value(value: Any, digits: int | None = None) -> Any:
    """`value` as JSON takes it: numpy scalars as Python numbers, a missing cell (None, NA,
    NaN) as None, and floats rounded to `digits` decimals when given (3 for µs: to the ns)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, str):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        value = item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if digits is None else round(value, digits)
    return value
