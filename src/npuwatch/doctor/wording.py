"""How quantities read in a check's one-line detail: sizes, rates, ages, temperatures."""

from __future__ import annotations

_BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(size: float) -> str:
    """A size in the largest binary unit that keeps it at or above 1: `3.2 GiB`, `64 GiB`."""
    if abs(size) < 1024:
        return f"{size:.0f} B"
    value = float(size)
    for unit in _BINARY_UNITS:  # noqa: B007 - the unit the loop stops at is the one printed
        value /= 1024
        if abs(value) < 1024:
            break
    number = f"{value:.1f}".removesuffix(".0")
    return f"{number} {unit}"


def human_rate(bytes_per_second: float) -> str:
    return f"{human_bytes(bytes_per_second)}/s"


def human_age(seconds: float) -> str:
    """How long ago, roughly: `12 s`, `5 min`, `3 h`, `2 d`."""
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def celsius(temperature: float) -> str:
    return f"{temperature:g} °C"


def watts(power: float) -> str:
    return f"{power:g} W"


def count_of(count: int, noun: str) -> str:
    """`1 file`, `3 files`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def joined(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def are(items: list[str]) -> str:
    return "are" if len(items) > 1 else "is"
