"""Numbers read from a line or a file, kept only when they fit where npuwatch stores them.

Every integer a record carries (pid, thread id, line, rank, device, ...) ends up in a signed
64-bit place: the journal's columns (which keep -2**63 for "none"), SQLite, the search engine's
`long`. A log line may print any number of digits, so a parser that takes a number from a line
asks `fitting_int` and, on None, leaves the field empty and flags the record
`value_out_of_range`; the record's `original` still holds the digits. Nothing raises.

The check costs a length test on the text the parser cut anyway: any decimal number of up to 18
digits (with a sign) fits, so `int()` on such a text is all the common case pays.
"""

from __future__ import annotations

import math
from typing import Protocol

OUT_OF_RANGE_FLAG = 256
"""`records.Flag.VALUE_OUT_OF_RANGE`, defined here so that the journal's query side, which never
loads records.py, and the C passes share one value."""
LARGEST = 2**63 - 1
"""The largest magnitude kept (the smallest, -2**63, stands for None in the journal)."""
SAFE_DECIMAL_LENGTH = 18
"""Every decimal text of up to this many characters (sign included) is a number that fits."""
SAFE_HEX_LENGTH = 15
"""Every hexadecimal text of up to this many characters fits (16**15 = 2**60)."""


def fitting_int(text: str, base: int = 10) -> int | None:
    """`text` (digits, maybe signed; `base` 10 or 16) as an int when it fits 64 bits, else None.

    Also None for a text that is not a number at all, so that a caller never needs a try.
    """
    if len(text) <= (SAFE_DECIMAL_LENGTH if base == 10 else SAFE_HEX_LENGTH):
        try:
            return int(text, base)
        except ValueError:
            return None
    digits = text.strip().lstrip("+-")
    if base == 16 and digits[:2].lower() == "0x":
        digits = digits[2:]
    digits = digits.lstrip("0")
    # Past 19 significant digits (16 hex) no value fits; int() of such a text could also be
    # refused by Python's own limit on long numbers (4300 digits).
    if len(digits) > (19 if base == 10 else 16):
        return None
    try:
        value = int(text, base)
    except ValueError:
        return None
    return value if -LARGEST <= value <= LARGEST else None


class Flagged(Protocol):
    flags: int


def field_int(record: Flagged, text: str, base: int = 10) -> int | None:
    """`fitting_int(text, base)` for a field of `record`, which is flagged when it does not fit."""
    if len(text) <= SAFE_HEX_LENGTH:  # fits in either base: the common case pays a length test
        return int(text, base)
    value = fitting_int(text, base)
    if value is None:
        record.flags |= OUT_OF_RANGE_FLAG
    return value


def fits(value: int) -> bool:
    """Whether an integer already made fits a 64-bit column (see LARGEST)."""
    return -LARGEST <= value <= LARGEST


def finite_float(value: float) -> float | None:
    """`value` when it is a finite float, else None (inf, -inf and nan are no measurement)."""
    return value if math.isfinite(value) else None


def document_int(value: object) -> int:
    """A whole-number field of a document read back (JSON from the search engine or a file);
    ValueError, never OverflowError, unless it is one that fits 64 bits."""
    try:
        number: int = int(value)  # type: ignore[call-overload]
    except OverflowError as error:  # int(inf)
        raise ValueError(f"{value!r} is not a whole number") from error
    if not fits(number):
        raise ValueError(f"{number} is out of the 64-bit range")
    return number


def document_float(value: object) -> float:
    """A number field of a document read back; ValueError unless it is finite."""
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number
