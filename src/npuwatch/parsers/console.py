"""Console output around CANN: error-message blocks, torch_npu wrappers, c10 and Python lines.

These are not slog records. `ErrorManager::GetErrorMessage()` assembles error blocks that
frameworks print (formats doc §2): `EZ9999: Inner Error!`, `CODE  message`, `CODE: [PID: n] ts
message`, `CODE[PID: n] ts Title(CODE):  message`, `[PID: n] ts Title(CODE): message`,
`Title(CODE): message`, `CODE: ts message`. Their `Possible Cause`, `Solution` and `TraceBack`
lines are indented and join the block as continuation lines. torch_npu adds
`[ERROR] ts (PID:n, Device:d, RankID:r) ERRxxxxx text`, c10 adds `[E928 07:22:40.7365 file:line]`.
"""

from __future__ import annotations

import re

from npuwatch.bounded_numbers import field_int
from npuwatch.parsers.timestamps import LocalClock, fields_us
from npuwatch.records import Flag, Record

_CODE = r"[EW][0-9A-Z][0-9]{4}"
_TS = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})-([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{3})\.([0-9]{3}))?"
)
# `CODE: ...`, `CODE  ...` (two spaces), `CODE[PID: n] ...`, each optionally with pid and time.
_CODE_FIRST = re.compile(
    r"(" + _CODE + r")(?::[ ]?|  |(?=\[PID))"
    r"(?:\[PID: ?([0-9]+)\] ?)?(?:" + _TS + r" ?)?"
    r"(?:[A-Za-z_]*\((" + _CODE + r")\): *)?"
)
# `[PID: n] ts Title(CODE): message`, with or without the spaces.
_PID_FIRST = re.compile(r"\[PID: ?([0-9]+)\] ?" + _TS + r" ?([A-Za-z_]*)\((" + _CODE + r")\): *")
# `Title(CODE): message` (no pid, no time).
_TITLE_FIRST = re.compile(r"([A-Z][A-Za-z_]+)\((" + _CODE + r")\): ")
_TORCH_NPU = re.compile(
    r"\[(ERROR|WARN|WARNING|INFO)\] " + _TS + r" \(PID:([0-9]+), Device:(-?[0-9]+), "
    r"RankID:(-?[0-9]+)\) (ERR[0-9]{5}) "
)
# c10 logger: `[E928 07:22:40.736525688 compiler_depend.ts:429] msg`, `[W NPUStream.cpp:365] msg`.
_C10 = re.compile(
    r"\[([EWIF])(?:([0-9]{1,2})([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?)? "
    r"([\w./-]+):([0-9]+)\] ?"
)
_PYTHON_EXCEPTION = re.compile(
    r"(?:[A-Za-z_][\w.]*(?:Error|Exception)|Traceback \(most recent call last\)|"
    r"terminate called after throwing an instance of)"
)
# A line that starts with a bracketed level and no CANN header: sample apps (`[INFO]  acl init
# success`), `[ERROR] HCCL error in: ...`, `[ERROR] RecentErrMsg: ...`.
_BRACKET_LEVEL = re.compile(r"\[(ERROR|WARNING|WARN|INFO|DEBUG)\]:? +")
_C10_LEVELS = {"E": "ERROR", "W": "WARNING", "I": "INFO", "F": "CRITICAL"}


def match_console(text: str, start: int, clock: LocalClock, year: int | None) -> Record | None:
    """A console record starting at `start` of `text`, or None when the line is none of them."""
    first = text[start : start + 1]
    if first in ("E", "W"):
        match = _CODE_FIRST.match(text, start)
        if match is not None:
            record = _record(text, "error_block", "ERROR" if first == "E" else "WARNING")
            record.error_codes = [match[1]]
            if match[2]:
                record.pid = field_int(record, match[2])
            record.timestamp_us = _ts(record, clock, match, 3)
            record.message = text[match.end() :].lstrip(" ")
            return record
    if first == "[":
        match = _PID_FIRST.match(text, start)
        if match is not None:
            record = _record(text, "error_block", "ERROR" if match[11][0] == "E" else "WARNING")
            record.error_codes = [match[11]]
            record.pid = field_int(record, match[1])
            record.timestamp_us = _ts(record, clock, match, 2)
            record.message = text[match.end() :]
            return record
        match = _TORCH_NPU.match(text, start)
        if match is not None:
            record = _record(text, "torch_npu", _level(match[1]))
            record.timestamp_us = _ts(record, clock, match, 2)
            record.pid = field_int(record, match[10])
            device, rank = field_int(record, match[11]), field_int(record, match[12])
            record.device = device if device is not None and device >= 0 else None
            record.rank = rank if rank is not None and rank >= 0 else None
            record.framework_code = match[13]
            record.message = text[match.start(13) :]
            return record
        match = _C10.match(text, start)
        if match is not None:
            record = _record(text, "c10", _C10_LEVELS[match[1]])
            if match[2] and year is not None:
                fields = [year, *(int(match[i]) for i in range(2, 7))]
                record.timestamp_us = _dated(record, fields_us(clock, fields, _micro(match[7])))
            record.origin_file, record.origin_line = match[8], field_int(record, match[9])
            record.message = text[match.end() :]
            return record
        match = _BRACKET_LEVEL.match(text, start)
        if match is not None:
            record = _record(text, "console", _level(match[1]))
            record.message = text[match.end() :]
            return record
    elif first.isupper():
        match = _TITLE_FIRST.match(text, start)
        if match is not None:
            record = _record(text, "error_block", "ERROR" if match[2][0] == "E" else "WARNING")
            record.error_codes = [match[2]]
            record.message = text[match.end() :]
            return record
    if first.isalpha():
        match = _PYTHON_EXCEPTION.match(text, start)
        if match is not None:
            record = _record(text, "python", "ERROR")
            record.message = text[start:]
            return record
    return None


def _record(text: str, fmt: str, level: str) -> Record:
    record = Record(text, fmt)
    record.level = level
    return record


def _level(word: str) -> str:
    return "WARNING" if word == "WARN" else word


def _ts(record: Record, clock: LocalClock, match: re.Match[str], first_group: int) -> int | None:
    """Time from the seven groups of _TS starting at `first_group` (ms and us optional)."""
    if match[first_group] is None:
        return None
    fields = [int(match[first_group + i]) for i in range(6)]
    milli, micro = match[first_group + 6], match[first_group + 7]
    fraction = int(milli) * 1000 + int(micro) if milli is not None else 0
    return _dated(record, fields_us(clock, fields, fraction))


def _dated(record: Record, timestamp_us: int | None) -> int | None:
    """The time of a date the line wrote; None, and the record flagged, when it is impossible."""
    if timestamp_us is None:
        record.flags |= Flag.VALUE_OUT_OF_RANGE
    return timestamp_us


def _micro(digits: str | None) -> int:
    """Microseconds from a fraction of one to nine digits."""
    if not digits:
        return 0
    return int((digits + "000000")[:6])
