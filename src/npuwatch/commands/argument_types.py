"""Argument types the commands share: each refuses a bad value with a line saying what it wants.

argparse turns the ArgumentTypeError into `npuwatch <command>: error: argument --top: expected
a whole number from 1 to 1000000, got '0'` and exit 2. Every number has both ends: a value past
any use (`-C 1e30`, `--top inf`) is a usage error here, not an OverflowError deeper down.
"""

from __future__ import annotations

import argparse
import math

from npuwatch.bounded_numbers import LARGEST, fitting_int

LARGEST_COUNT = 1_000_000
"""The most rows, names or steps a `--top` or a window may ask for."""
LARGEST_CONTEXT = 100_000
"""The most lines of context shown around a match or before an error."""


def _shown(text: str) -> str:
    """The argument as a message quotes it: whole, unless it is a wall of digits."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text)} characters)"


def _whole_number(text: str, lowest: int, highest: int) -> int:
    value = fitting_int(text.strip())
    if value is None or not lowest <= value <= highest:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {lowest} to {highest}, got {_shown(text)}"
        )
    return value


def positive_int(text: str) -> int:
    """A count: 1 to LARGEST_COUNT (`--top`, `--spike-window`)."""
    return _whole_number(text, 1, LARGEST_COUNT)


def count_or_zero(text: str) -> int:
    """A count where 0 means all: 0 to LARGEST_COUNT (`baseline compare --top`)."""
    return _whole_number(text, 0, LARGEST_COUNT)


def context_lines(text: str) -> int:
    """Lines of context: 0 to LARGEST_CONTEXT (`grep -C`, `scan --context`)."""
    return _whole_number(text, 0, LARGEST_CONTEXT)


def match_limit(text: str) -> int:
    """How many matches to stop after (`grep -m`): 0 or more, within 64 bits."""
    return _whole_number(text, 0, LARGEST)


def identifier(text: str) -> int:
    """A pid or a device id as records carry them: any whole number within 64 bits (firmware
    writes pid -1)."""
    return _whole_number(text, -LARGEST, LARGEST)


def replica_count(text: str) -> int:
    """Replicas of an index: 0 to 100."""
    return _whole_number(text, 0, 100)


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {_shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {_shown(text)}")
    return value


def non_negative(text: str) -> float:
    """A tolerance: 0 or more, finite."""
    value = _finite(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return value


def fraction(text: str) -> float:
    """A share: 0 to 1."""
    value = non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a value from 0 to 1, got {text}")
    return value


def ratio_above_one(text: str) -> float:
    """A factor something must exceed (a spike's ratio to its median), finite."""
    value = _finite(text)
    if not value > 1:
        raise argparse.ArgumentTypeError(f"expected a ratio above 1, got {text}")
    return value
