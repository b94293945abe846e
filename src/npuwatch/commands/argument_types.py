"""Argument types the commands share: each refuses a bad value with a line saying what it wants.

argparse turns the ArgumentTypeError into `npuwatch <command>: error: argument --top: expected
1 or more, got 0` and exit 2.
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A count: 1 or more (`--top`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def non_negative(text: str) -> float:
    """A tolerance: 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return value


def fraction(text: str) -> float:
    """A share: 0 to 1."""
    value = non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a value from 0 to 1, got {text}")
    return value


def ratio_above_one(text: str) -> float:
    """A factor something must exceed (a spike's ratio to its median)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 1:
        raise argparse.ArgumentTypeError(f"expected a ratio above 1, got {text}")
    return value
