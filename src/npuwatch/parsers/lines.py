"""One line in, a record start or nothing (a continuation line) out.

The order matters and is the order of likelihood: the strict CANN header (almost every line of a
plog), then the tolerant header, then prefixes that wrap a line, then console blocks and
neighbouring formats. A line that matches none of them continues the record before it (formats
doc §1.4); the stream parser decides what that means at the start of a stream. So does an indented
line, unless a complete CANN header follows its blanks (a pasted log, see `prefixes`).
"""

from __future__ import annotations

from npuwatch.parsers.console import match_console
from npuwatch.parsers.neighbours import match_neighbour
from npuwatch.parsers.prefixes import INDENTATION, Prefix, peel
from npuwatch.parsers.slog import PID_OPENING, STRICT, from_strict, from_tolerant
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Flag, Record


def classify_slow(
    text: str, clock: LocalClock, year: int | None
) -> tuple[Record | None, Prefix | None]:
    """Classify a line that the strict header did not match.

    Returns the record the line starts (or None for a continuation line) and the prefixes
    peeled off it, which still describe a continuation line (a vLLM level, a rank).
    """
    first = text[:1]
    if not first:
        return None, None
    indented = first in INDENTATION
    if indented and PID_OPENING.search(text) is None:
        return None, None  # a continuation line: TraceBack, JSON, `<exception_print>` ...
    record: Record | None = None if indented else from_tolerant(text, 0, clock)
    if record is not None:
        return record, None
    prefix = peel(text)
    start = 0
    if prefix is not None:
        start = prefix.end
        if start < len(text):
            match = STRICT.match(text, start)
            if match is not None:
                record = from_strict(match, text, clock)
            else:
                record = from_tolerant(text, start, clock)
        if record is None and (prefix.indented or start == len(text)):
            # Blanks then no CANN header: a continuation line, as an indented line always was
            # (the prefixes before blanks still describe it: `[rank0]:         TraceBack`).
            return None, None if indented else prefix
    if record is None:
        record = match_console(text, start, clock, year)
    if record is None:
        record = match_neighbour(text, start, clock, year)
    if record is None and prefix is not None and prefix.level is not None:
        record = record_from_prefix(text, prefix, clock, year)
    if record is not None and prefix is not None:
        apply_prefix(record, prefix)
    return record, prefix


def record_from_prefix(text: str, prefix: Prefix, clock: LocalClock, year: int | None) -> Record:
    """A record for a line whose only structure is a framework logger prefix (vLLM)."""
    record = Record(text, "vllm")
    record.level = prefix.level
    record.message = text[prefix.end :]
    record.origin_file, record.origin_line = prefix.origin_file, prefix.origin_line
    if prefix.date is not None and year is not None:
        record.timestamp_us = clock.local_us(year, *prefix.date)
        if record.timestamp_us is None:  # 30 February, hour 25: kept with no time
            record.flags |= Flag.VALUE_OUT_OF_RANGE
    apply_prefix(record, prefix)
    return record


def apply_prefix(record: Record, prefix: Prefix) -> None:
    """Flag the record as wrapped, and fill what it lacks from what its prefixes said."""
    record.flags |= Flag.PREFIXED | prefix.flags
    if prefix.rank is not None and record.rank is None:
        record.rank = prefix.rank
    if prefix.pid is not None and record.pid is None:
        record.pid = prefix.pid
    if prefix.process_name and not record.process_name:
        record.process_name = prefix.process_name
