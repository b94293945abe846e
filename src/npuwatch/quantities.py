"""Durations and byte sizes as people write them in configuration: `200ms`, `1h30m`, `64KiB`.

The parsers accept a plain number (seconds, bytes) or a string with units; config/values.py
wraps them as pydantic types (stored as float seconds and int bytes, so runtime code never
parses units again), and `grep --since 1h` uses them directly, without loading pydantic.
`format_duration` and `format_bytes` write the canonical short form back.
"""

from __future__ import annotations

import math
import re

DURATION_FORMS = "expected a duration such as 10s, 5m, 1h or 30d"
BYTE_SIZE_FORMS = (
    "expected a size in bytes such as 512, 64KiB, 1 MiB or 10GiB "
    "(units B, KB, KiB, MB, MiB, GB, GiB, TB, TiB; KB is 1000 bytes, KiB 1024)"
)

LONGEST_DURATION_S = 100 * 365 * 86400.0
"""No duration npuwatch takes is longer than a century: a bound that keeps every sum, product and
timer wait (Python refuses a wait past 2**63 ns) in range. Settings have tighter bounds."""
LARGEST_BYTE_SIZE = 1 << 50
"""Nor is any size larger than a PiB."""


class QuantityOutOfRange(ValueError):
    """A duration or size written correctly, but negative, not finite or beyond any use."""


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# `ms` comes before `m` so that "200ms" is not read as 200 minutes and a stray "s".
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION = re.compile(rf"(?:{_DURATION_PART.pattern})+")

_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "kib": 1 << 10,
    "mb": 1000**2,
    "mib": 1 << 20,
    "gb": 1000**3,
    "gib": 1 << 30,
    "tb": 1000**4,
    "tib": 1 << 40,
}
_BYTE_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)", re.IGNORECASE)


def parse_duration(value: object) -> float:
    """Seconds from a number of seconds or a string such as "200ms", "10s", "1h30m" or "30d":
    finite, not negative, and at most LONGEST_DURATION_S."""
    seconds = _duration_seconds(value)
    if seconds < 0:  # before the finite test: -inf is negative first
        raise QuantityOutOfRange(f"{DURATION_FORMS}, got {_shown(value)} (negative)")
    if not math.isfinite(seconds):
        raise QuantityOutOfRange(f"{DURATION_FORMS}, got {_shown(value)} (not a finite number)")
    if seconds > LONGEST_DURATION_S:
        raise QuantityOutOfRange(f"{DURATION_FORMS}, got {_shown(value)} (more than 100 years)")
    return seconds


def _duration_seconds(value: object) -> float:
    # bool is an int to Python, but `max_age = true` is a mistake, not one second.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an int beyond any float
            return math.inf
    if isinstance(value, str):
        text = value.strip().lower()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            return float(text)  # inf for a thousand digits: refused by the caller
        if _DURATION.fullmatch(text):
            seconds = 0.0
            for amount, unit in _DURATION_PART.findall(text):
                # Divide rather than multiply by 0.001 so that "200ms" is exactly 0.2.
                if unit == "ms":
                    seconds += float(amount) / 1000
                else:
                    seconds += float(amount) * _DURATION_UNITS[unit]
            return seconds
    raise ValueError(f"{DURATION_FORMS}, got {_shown(value)}")


def _shown(value: object) -> str:
    """`value` as an error message quotes it: whole, unless it is a wall of digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"


def parse_byte_size(value: object) -> int:
    """Bytes from an int or a string such as "512", "64KiB", "64KB" (1000-based) or "1 GiB":
    not negative, and at most LARGEST_BYTE_SIZE."""
    size = _byte_count(value)
    if size < 0:
        raise QuantityOutOfRange(f"{BYTE_SIZE_FORMS}, got {_shown(value)} (negative)")
    if size > LARGEST_BYTE_SIZE:
        raise QuantityOutOfRange(f"{BYTE_SIZE_FORMS}, got {_shown(value)} (more than 1PiB)")
    return size


def _byte_count(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _BYTE_SIZE.fullmatch(value.strip())
        if match and match[2].lower() in _BYTE_UNITS:
            # In integers, so that "1.1TB" is exact; a size must still come out as whole bytes.
            whole, _, fraction = match[1].partition(".")
            if len(whole.lstrip("0")) > 20:  # beyond any size (and int() refuses 4300 digits)
                return LARGEST_BYTE_SIZE + 1
            scaled = int(whole + fraction[:20]) * _BYTE_UNITS[match[2].lower()]
            size, remainder = divmod(scaled, 10 ** len(fraction[:20]))
            if remainder == 0 and fraction[20:].strip("0") == "":
                return int(size)  # `10 ** n` is typed as possibly a float
    raise ValueError(f"{BYTE_SIZE_FORMS}, got {_shown(value)}")


def format_duration(seconds: float) -> str:
    """The canonical short form of a duration: "200ms", "10s", "1h30m", "30d"."""
    milliseconds = round(seconds * 1000)
    if milliseconds <= 0 or abs(milliseconds - seconds * 1000) > 1e-6:
        # Zero, or finer than a millisecond: plain seconds say it exactly.
        return f"{seconds:g}s"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        count, milliseconds = divmod(milliseconds, size)
        if count:
            parts.append(f"{count}{unit}")
    if milliseconds:
        parts.append(f"{milliseconds}ms")
    return "".join(parts)


def format_bytes(size: int) -> str:
    """The canonical short form of a byte size: the largest unit that divides it, "64KiB"."""
    for unit in ("TiB", "GiB", "MiB", "KiB", "TB", "GB", "MB", "KB"):
        factor = _BYTE_UNITS[unit.lower()]
        if size and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"
