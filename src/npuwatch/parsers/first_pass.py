"""The first pass over a chunk: split it into lines and turn every strict CANN header line into a
record, leaving every other line for the general classifier.

This is the part of parsing that runs once per line of a plog, so it has two implementations
with one contract: `scan_chunk_python` below, and `_speedups.scan_chunk` in C, used when the
extension was built. Tests hold the two to the same output for arbitrary input.

Contract of `scan_chunk(data, offset, record_type, minutes, minute_fallback, max_line_bytes,
source, first, max_lines)`: `data` is a chunk that ends at a line end or at the end of the
stream. The result has one item per line from `data[first:]`, in order, and at most `max_lines`
of them (-1: no bound; the caller takes the rest from where the last item ends, so that a chunk
of a million empty lines is never a million items at once):

* a `record_type` instance for a line whose start matches the strict header, with `original`,
  `format`, `level`, `logger`, `pid`, `process_name`, `timestamp_us`, `body`, `offset`,
  `end_offset`, `source`, and `flags` / `error_codes` when they are not empty;
* otherwise a tuple `(text, start, end)`: the line decoded (None when it is not clean UTF-8 or is
  longer than `max_line_bytes`; the caller then decodes `data[start - offset : ...]` itself), its
  byte offset and the offset just after its newline.

`minutes` maps a minute prefix (`2025-01-10-17:53`) to its epoch microseconds; on a miss
`minute_fallback(prefix)` is called (and is expected to fill `minutes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npuwatch.bounded_numbers import SAFE_DECIMAL_LENGTH, fitting_int
from npuwatch.parsers.codes import find_error_codes
from npuwatch.parsers.slog import PRE_CLOCK_SYNC_PREFIX, STRICT
from npuwatch.records import Flag, Record, SourceInfo

Item = Record | tuple[str | None, int, int]
ScanChunk = Callable[
    [
        bytes,
        int,
        type[Record],
        dict[Any, Any],
        Callable[[str], int | None],
        int,
        SourceInfo,
        int,
        int,
    ],
    list[Item],
]


def scan_chunk_python(
    data: bytes,
    offset: int,
    record_type: type[Record],
    minutes: dict[Any, Any],
    minute_fallback: Callable[[str], int | None],
    max_line_bytes: int,
    source: SourceInfo,
    first: int = 0,
    max_lines: int = -1,
) -> list[Item]:
    """The reference implementation of the first pass (see the module docstring)."""
    items: list[Item] = []
    if not 0 <= first <= len(data):
        raise ValueError("scan_chunk: first is outside the data")
    rest = data[first:] if first else data
    if not rest:
        return items
    raws = rest.split(b"\n") if max_lines < 0 else rest.split(b"\n", max_lines)
    # Past `max_lines` lines the last part is the rest, for the next call; else an empty last
    # part means the data ended with a newline.
    last_has_newline = len(raws) > max_lines >= 0 or raws[-1] == b""
    if last_has_newline:
        raws.pop()
    last_index = len(raws) - 1
    position = offset + first
    strict_match = STRICT.match
    for index, raw in enumerate(raws):
        start = position
        position += len(raw) + (1 if last_has_newline or index < last_index else 0)
        text: str | None
        if len(raw) > max_line_bytes:
            text = None
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            items.append((None, start, position))
            continue
        parse_text = text[:-1] if text[-1:] == "\r" else text
        match = strict_match(parse_text)
        if match is None:
            items.append((text, start, position))
            continue
        level, module, pid, pname, minute, second, milli, micro = match.groups()
        base = minutes.get(minute)
        if base is None:
            base = minute_fallback(minute)
        record = record_type.__new__(record_type)
        record.original = text
        record.format = "slog"
        record.level = level
        record.logger = module
        flags = 0
        # Up to 18 characters always fit 64 bits: longer pids are rare enough to check fully.
        record.pid = int(pid) if len(pid) <= SAFE_DECIMAL_LENGTH else fitting_int(pid)
        if record.pid is None:
            flags = Flag.VALUE_OUT_OF_RANGE
        # A space after the comma is a known anomaly (`DRV(28499, hccp_service.bin)`).
        record.process_name = pname if pname[:1] != " " else pname[1:]
        if base is None or second > "60":
            # An impossible date or time (30 February, hour 25, second 75): no time, a flag.
            record.timestamp_us = None
            flags |= Flag.VALUE_OUT_OF_RANGE
        else:
            # ms and us are three digits each, so their concatenation is the microseconds.
            record.timestamp_us = base + int(second + milli + micro)
            if minute < PRE_CLOCK_SYNC_PREFIX:
                flags |= Flag.PRE_CLOCK_SYNC
        body = parse_text[match.end() :]
        record.body = body
        record.offset = start
        record.end_offset = position
        record.source = source
        codes = find_error_codes(body)
        if codes:
            record.error_codes = codes
            flags |= Flag.HAS_CODES
        if flags:
            record.flags = flags
        items.append(record)
    return items


def _choose() -> ScanChunk:
    try:
        from npuwatch.parsers import _speedups  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:
        return scan_chunk_python
    scan: ScanChunk = _speedups.scan_chunk
    return scan


scan_chunk: ScanChunk = _choose()
"""The first pass in use: the C extension when it was built, else the Python reference."""
NATIVE = scan_chunk is not scan_chunk_python
