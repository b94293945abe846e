"""The CANN slog/dlog record header: `[LEVEL] MODULE(pid,pname):YYYY-MM-DD-HH:MM:SS.mmm.uuu body`.

`dlog_message.c` prints every record with this header (formats doc §1.1). Real material also
shows the anomalies of §1.2: no space after `]`, an empty process name, a space after the comma,
a space between date and time or after the colon, a lost leading `[`, a damaged level, a time
that lost a colon, and MindSpore's own logger with a hex thread id in the parentheses. The strict
pattern is tried first because almost every line of a real plog matches it; the tolerant one runs
only for lines that failed.
"""

from __future__ import annotations

import re

from npuwatch.bounded_numbers import field_int
from npuwatch.parsers.slog_body import FIELD_MARKERS, parse_body
from npuwatch.parsers.timestamps import PRE_CLOCK_SYNC_YEAR, LocalClock
from npuwatch.records import Flag, Record
from npuwatch.vocabulary import SLOG_LEVELS as LEVELS

PRE_CLOCK_SYNC_PREFIX = str(PRE_CLOCK_SYNC_YEAR)

_LEVEL_REPAIRS = {"ERR0R": "ERROR", "WARN": "WARNING"}

STRICT = re.compile(
    r"\[(DEBUG|INFO|WARNING|ERROR|EVENT|TRACE|OPLOG|NULL)\] "
    r"([A-Z][A-Z0-9_]*)\((-?[0-9]+),([^),]*)\):"
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}:[0-9]{2}):([0-9]{2})\.([0-9]{3})\.([0-9]{3}) ?"
)
"""The canonical header. Groups: level, module, pid, pname, minute prefix, s, ms, us."""

TOLERANT = re.compile(
    r"\[?([A-Z][A-Z0-9]{2,8})\] ?([A-Z][A-Z0-9_]*|[0-9]+)"
    r"\((-?[0-9]+),(?: ?([0-9a-f]{6,16}),)? ?([^)]*)\) ?: ?"
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})[- ]([0-9]{2}):([0-9]{2}):?([0-9]{2})"
    r"\.([0-9]{3})(?:\.?([0-9]{3}))? ?"
)
"""Every header anomaly seen in real material. Groups: level, module, pid, MindSpore thread id
(hex), pname, year, month, day, hour, minute, second, ms, us. Collected and edited logs also
show a month or day without its zero (`2025-9-11`), microseconds run into the milliseconds
(`18.831505`) and milliseconds alone (`11.000`)."""

PID_OPENING = re.compile(r"\(-?[0-9]+,")
"""What both headers hold: a line without it cannot start a record with a header, whatever its
prefixes (one C-speed search that spares the indented continuation lines all the rest)."""


class SlogRecord(Record):
    """A record with a CANN header; its body fields are parsed on first access."""

    body_parser = staticmethod(parse_body)
    body_markers = FIELD_MARKERS

    def __init__(
        self,
        original: str,
        level: str,
        module: str,
        pid: int | None,
        process_name: str,
        timestamp_us: int | None,
        body: str,
    ) -> None:
        self.original = original
        self.format = "slog"
        self.level = level
        self.logger = module
        self.pid = pid
        self.process_name = process_name
        self.timestamp_us = timestamp_us
        self.body = body


def from_strict(match: re.Match[str], text: str, clock: LocalClock) -> SlogRecord:
    """Build a record from a match of STRICT on `text` (the whole original line)."""
    level, module, pid, pname, minute, second, milli, micro = match.groups()
    base = clock.minutes.get(minute)
    if base is None:
        base = clock.slog_minute_us(minute)
    impossible = base is None or second > "60"
    record = SlogRecord(
        text,
        level,
        module,
        None,
        # A space after the comma is a known anomaly (`DRV(28499, hccp_service.bin)`).
        pname if pname[:1] != " " else pname[1:],
        # ms and us are three digits each, so the concatenation is the microseconds.
        None if impossible else base + int(second + milli + micro),  # type: ignore[operator]
        text[match.end() :],
    )
    record.pid = field_int(record, pid)
    if impossible:  # 30 February, hour 25: the record is kept with no time
        record.flags |= Flag.VALUE_OUT_OF_RANGE
    elif minute < PRE_CLOCK_SYNC_PREFIX:
        record.flags |= Flag.PRE_CLOCK_SYNC
    return record


def from_tolerant(text: str, start: int, clock: LocalClock) -> SlogRecord | None:
    """Build a record when the tolerant header matches `text` at `start`, else None."""
    match = TOLERANT.match(text, start)
    if match is None:
        return None
    level = _LEVEL_REPAIRS.get(match[1], match[1])
    if level not in LEVELS:
        return None
    year = int(match[6])
    timestamp = clock.local_us(
        year,
        int(match[7]),
        int(match[8]),
        int(match[9]),
        int(match[10]),
        int(match[11]),
        int(match[12]) * 1000 + int(match[13] or 0),
    )
    record = SlogRecord(text, level, match[2], None, match[5], timestamp, text[match.end() :])
    record.pid = field_int(record, match[3])
    if match[4]:  # MindSpore's logger: a hex thread id inside the parentheses
        record.format = "mindspore"
        record.thread_id = field_int(record, match[4], 16)
    if timestamp is None:  # 30 February, hour 25: the record is kept with no time
        record.flags |= Flag.VALUE_OUT_OF_RANGE
    elif year < PRE_CLOCK_SYNC_YEAR:
        record.flags |= Flag.PRE_CLOCK_SYNC
    return record
