"""Parsers: pure functions from bytes to records. They never touch files, network or clock."""

from npuwatch.parsers.stream import ParseLimits, StreamParser, iter_records, parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone

__all__ = [
    "LocalClock",
    "ParseLimits",
    "StreamParser",
    "iter_records",
    "parse_bytes",
    "resolve_timezone",
]
