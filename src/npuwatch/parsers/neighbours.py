"""Line formats found next to CANN logs (formats doc §3) and in the tools around them.

slogd's self-log, host syslog lines of libslog and AML, the driver's `host_kernel.log`, dmesg,
the black-box `history.log`, the install log, firmware odds and ends, MindIE/ATB runner logs,
torch.distributed's logger and Python's default logging format.
"""

from __future__ import annotations

import re

from npuwatch.bounded_numbers import field_int
from npuwatch.parsers.timestamps import PRE_CLOCK_SYNC_YEAR, LocalClock, fields_us
from npuwatch.records import Flag, Record

_LEVEL_WORDS = {
    "INFO": "INFO",
    "info": "INFO",
    "WARN": "WARNING",
    "WARNING": "WARNING",
    "warn": "WARNING",
    "warning": "WARNING",
    "ERROR": "ERROR",
    "error": "ERROR",
    "DEBUG": "DEBUG",
    "debug": "DEBUG",
    "EVENT": "EVENT",
    "CRITICAL": "CRITICAL",
    "critical": "CRITICAL",
    "FATAL": "CRITICAL",
    "fatal": "CRITICAL",
    "TRACE": "TRACE",
    "trace": "TRACE",
}
_LEVEL = (
    r"(INFO|WARN|WARNING|ERROR|DEBUG|EVENT|CRITICAL|FATAL|TRACE"
    r"|info|warn|warning|error|debug|critical|fatal|trace)"
)
_DATE = r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}

# 3.1 slogd self-log: `2025-05-07 19:54:54.608[INFO] log_path_mgr.c:123: msg`.
_SLOGD = re.compile(
    _DATE + r" ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})\[" + _LEVEL + r"\] ([\w.]+):([0-9]+): ?"
)
# Python logging default: `2024-10-21 10:42:00,218 - lmdeploy - ERROR - model_agent.py:489 - msg`.
_PYTHON_LOGGING = re.compile(
    _DATE
    + r" ([0-9]{2}):([0-9]{2}):([0-9]{2}),([0-9]{3}) - ([\w.]+) - "
    + _LEVEL
    + r" - (?:([\w.]+):([0-9]+) - )?"
)
# 3.3 host_kernel.log and 3.5 history.log: `[YYYY-MM-DD-HH:MM:SS.uuuuuu] ...`.
_BRACKET_DATETIME = re.compile(r"\[" + _DATE + r"-([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{6})\] ")
_KERNEL_TAIL = re.compile(
    r"\[ascend\] \[(\w+)\] \[" + _LEVEL + r"\] \[(\w+) ([0-9]+)\] <([^<>]*)> ?"
)
# The task field of kernel messages: `<comm:pid,tid>` (dmesg) or `<comm:pid:tid[:cpu]>`
# (host_kernel.log); a kworker's comm holds a colon itself (`kworker/u16:2`).
_KERNEL_TASK = re.compile(
    r"(kworker/u?[0-9]+:[0-9]+\S*?|[^:,<>]*):([0-9]+)(?:[:,]([0-9]+))?(?::[0-9]+)?$"
)
# 3.4 dmesg: `[ 2081.843939] [ascend] [devmm] [func line] <comm:pid,tid> msg`.
_DMESG = re.compile(
    r"\[ *[0-9]+\.[0-9]+\] "
    r"(?:\[ascend\] (?:\[[A-Z]+\] )?\[(\w+)\] \[(\w+) ([0-9]+)\] <([^<>]*)> ?)?"
)
# 3.6 install log: `[Component] [YYYY-MM-DD HH:MM:SS] [LEVEL]msg`.
_INSTALL = re.compile(
    r"\[([\w -]+)\] \[" + _DATE + r" ([0-9]{2}):([0-9]{2}):([0-9]{2})\] \[" + _LEVEL + r"\] ?"
)
# MindIE/ATB: `[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] msg`.
_MINDIE = re.compile(
    r"\["
    + _DATE
    + r" ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,6})\] \["
    + _LEVEL
    + r"\] \[([0-9]+)\] (?:\[([\w./-]+):([0-9]+)\] ?)?"
)
# torch.distributed: `[285] [2025-12-12 12:10:10:644] torch.distributed: [ERROR] [479] msg`.
_TORCH_DISTRIBUTED = re.compile(
    r"\[([0-9]+)\] \[" + _DATE + r" ([0-9]{2}):([0-9]{2}):([0-9]{2})[:.]([0-9]{1,6})\] "
    r"([\w.]+): \[" + _LEVEL + r"\] (?:\[([0-9]+)\] )?"
)
# 3.7 firmware: `[INFO]HSM:1970-01-01 00:03:45.333 msg` and `[00:03:45.344][info] msg`.
_HSM = re.compile(
    r"\[" + _LEVEL + r"\]([A-Z]+):" + _DATE + r" ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3}) ?"
)
_CLOCK_LEVEL = re.compile(r"\[[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\]\[" + _LEVEL + r"\] ?")
# 3.2 syslog: `Mon DD HH:MM:SS host comm[pid]: (PID)file.c:line: msg` or AML's bracket form.
_SYSLOG = re.compile(
    r"([A-Z][a-z]{2}) +([0-9]{1,2}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) (\S+) ([^:\[\s]+)"
    r"(?:\[([0-9]+)\])?: (?:\(([0-9]+)\)([\w.]+):([0-9]+): ?)?"
)


def match_neighbour(text: str, start: int, clock: LocalClock, year: int | None) -> Record | None:
    """A record in one of the neighbouring formats starting at `start`, or None."""
    first = text[start : start + 1]
    if first.isdigit():
        return _slogd(text, start, clock) or _python_logging(text, start, clock)
    if first == "[":
        return (
            _bracket_datetime(text, start, clock)
            or _dmesg(text, start)
            or _mindie(text, start, clock)
            or _torch_distributed(text, start, clock)
            or _install(text, start, clock)
            or _hsm(text, start, clock)
            or _clock_level(text, start)
        )
    if first.isupper():
        return _syslog(text, start, clock, year)
    return None


def _record(text: str, fmt: str, level: str | None, message_start: int) -> Record:
    record = Record(text, fmt)
    record.level = None if level is None else _LEVEL_WORDS.get(level, level)
    record.message = text[message_start:]
    return record


def _time(
    record: Record, clock: LocalClock, match: re.Match[str], first: int, fraction_digits: int
) -> int | None:
    """Time from groups year, month, day, hour, minute, second[, fraction] at `first`; None,
    and the record flagged, when the date is impossible (30 February, hour 25)."""
    fields = [int(match[first + i]) for i in range(6)]
    micro = 0
    if fraction_digits:
        digits = match[first + 6]
        micro = int((digits + "000000")[:6])
    return _dated(record, fields_us(clock, fields, micro))


def _dated(record: Record, timestamp_us: int | None) -> int | None:
    if timestamp_us is None:
        record.flags |= Flag.VALUE_OUT_OF_RANGE
    return timestamp_us


def _mark_pre_sync(record: Record, match: re.Match[str], year_group: int) -> None:
    if record.timestamp_us is not None and int(match[year_group]) < PRE_CLOCK_SYNC_YEAR:
        record.flags |= Flag.PRE_CLOCK_SYNC


def _slogd(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _SLOGD.match(text, start)
    if match is None:
        return None
    record = _record(text, "slogd", match[8], match.end())
    record.timestamp_us = _time(record, clock, match, 1, 3)
    record.origin_file, record.origin_line = match[9], field_int(record, match[10])
    _mark_pre_sync(record, match, 1)
    return record


def _python_logging(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _PYTHON_LOGGING.match(text, start)
    if match is None:
        return None
    record = _record(text, "python_logging", match[9], match.end())
    record.timestamp_us = _time(record, clock, match, 1, 3)
    record.logger = match[8]
    if match[10]:
        record.origin_file, record.origin_line = match[10], field_int(record, match[11])
    return record


def _bracket_datetime(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _BRACKET_DATETIME.match(text, start)
    if match is None:
        return None
    kernel = _KERNEL_TAIL.match(text, match.end())
    if kernel is not None:
        record = _record(text, "host_kernel", kernel[2], kernel.end())
        record.submodule, record.function = kernel[1], kernel[3]
        set_kernel_task(record, kernel[5])
    elif text.startswith("system exception code", match.end()):
        record = _record(text, "blackbox", "ERROR", match.end())
    else:
        record = _record(text, "host_kernel", None, match.end())
    record.timestamp_us = _time(record, clock, match, 1, 6)
    _mark_pre_sync(record, match, 1)
    return record


def _dmesg(text: str, start: int) -> Record | None:
    match = _DMESG.match(text, start)
    if match is None:
        return None
    record = _record(text, "dmesg", None, match.end())
    if match[1]:
        record.submodule, record.function = match[1], match[2]
        set_kernel_task(record, match[4])
    return record


def set_kernel_task(record: Record, task: str) -> None:
    """Set process name, pid and thread from a kernel task field such as `kworker/0:3:224:224`."""
    match = _KERNEL_TASK.match(task)
    if match is None:
        return
    record.process_name = match[1]
    record.pid = field_int(record, match[2])
    if match[3]:
        record.thread_id = field_int(record, match[3])


def _mindie(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _MINDIE.match(text, start)
    if match is None:
        return None
    record = _record(text, "mindie", match[8], match.end())
    record.timestamp_us = _time(record, clock, match, 1, 1)
    record.thread_id = field_int(record, match[9])
    if match[10]:
        record.origin_file, record.origin_line = match[10], field_int(record, match[11])
    return record


def _torch_distributed(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _TORCH_DISTRIBUTED.match(text, start)
    if match is None:
        return None
    record = _record(text, "torch_distributed", match[10], match.end())
    record.pid = field_int(record, match[1])
    record.timestamp_us = _time(record, clock, match, 2, 1)
    record.logger = match[9]
    if match[11]:
        record.thread_id = field_int(record, match[11])
    return record


def _install(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _INSTALL.match(text, start)
    if match is None:
        return None
    record = _record(text, "install", match[8], match.end())
    record.logger = match[1]
    record.timestamp_us = _time(record, clock, match, 2, 0)
    return record


def _hsm(text: str, start: int, clock: LocalClock) -> Record | None:
    match = _HSM.match(text, start)
    if match is None:
        return None
    record = _record(text, "firmware", match[1], match.end())
    record.logger = match[2]
    record.timestamp_us = _time(record, clock, match, 3, 3)
    _mark_pre_sync(record, match, 3)
    return record


def _clock_level(text: str, start: int) -> Record | None:
    match = _CLOCK_LEVEL.match(text, start)
    if match is None:
        return None
    return _record(text, "firmware", match[1], match.end())


def _syslog(text: str, start: int, clock: LocalClock, year: int | None) -> Record | None:
    match = _SYSLOG.match(text, start)
    if match is None or match[1] not in _MONTHS:
        return None
    record = _record(text, "syslog", None, match.end())
    record.process_name = match[7]
    if match[8]:
        record.pid = field_int(record, match[8])
    if match[9]:
        record.pid = field_int(record, match[9])
        record.origin_file, record.origin_line = match[10], field_int(record, match[11])
    if year is not None:
        record.timestamp_us = _dated(
            record,
            clock.local_us(
                year, _MONTHS[match[1]], int(match[2]), int(match[3]), int(match[4]), int(match[5])
            ),
        )
    level = re.match(r"\[ascend\]\[" + _LEVEL + r"\]\[(\w+)\]", record.message)
    if level is not None:
        record.level = _LEVEL_WORDS[level[1]]
        record.logger = level[2]
    return record
