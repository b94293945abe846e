"""Durations and byte sizes as people write them in configuration: `200ms`, `1h30m`, `64KiB`.

The parsers accept a plain number (seconds, bytes) or a string with units; config/values.py
wraps them as pydantic types (stored as float seconds and int bytes, so runtime code never
parses units again), and `grep --since 1h` uses them directly, without loading pydantic.
`format_duration` and `format_bytes` write the canonical short form back.
"""

from __future__ import annotations

import re

DURATION_FORMS = "expected a duration such as 10s, 5m, 1h or 30d"
BYTE_SIZE_FORMS = (
    "expected a size in bytes such as 512, 64KiB, 1 MiB or 10GiB "
    "(units B, KB, KiB, MB, MiB, GB, GiB, TB, TiB; KB is 1000 bytes, KiB 1024)"
)

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
    """Seconds from a number of seconds or a string such as "200ms", "10s", "1h30m" or "30d"."""
    # bool is an int to Python, but `max_age = true` is a mistake, not one second.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{DURATION_FORMS}, got {value!r} (negative)")
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            return float(text)
        if _DURATION.fullmatch(text):
            seconds = 0.0
            for amount, unit in _DURATION_PART.findall(text):
                # Divide rather than multiply by 0.001 so that "200ms" is exactly 0.2.
                if unit == "ms":
                    seconds += float(amount) / 1000
                else:
                    seconds += float(amount) * _DURATION_UNITS[unit]
            return seconds
    raise ValueError(f"{DURATION_FORMS}, got {value!r}")


def parse_byte_size(value: object) -> int:
    """Bytes from an int or a string such as "512", "64KiB", "64KB" (1000-based) or "1 GiB"."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{BYTE_SIZE_FORMS}, got {value!r} (negative)")
        return value
    if isinstance(value, str):
        match = _BYTE_SIZE.fullmatch(value.strip())
        if match and match[2].lower() in _BYTE_UNITS:
            # In integers, so that "1.1TB" is exact; a size must still come out as whole bytes.
            whole, _, fraction = match[1].partition(".")
            scaled = int(whole + fraction) * _BYTE_UNITS[match[2].lower()]
            size, remainder = divmod(scaled, 10 ** len(fraction))
            if remainder == 0:
                return int(size)  # `10 ** n` is typed as possibly a float
    raise ValueError(f"{BYTE_SIZE_FORMS}, got {value!r}")


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
