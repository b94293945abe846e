"""The body of a CANN slog record: `[file:line]` followed by each component's own convention.

The formats doc §1.3 lists nineteen body styles (B1–B19). This module reads the thread id,
source file and line, function, sub-module and tags wherever a style carries them, and leaves
the rest as the message. Each style is one pattern with named groups (`tid`, `func`, `sub`,
`file`, `line`, `tag`, `rank`, `device`); the patterns are tried in order of how often they
occur, after a dispatch on the first character of the text, and the first that matches wins.
B1/B2, which most RUNTIME/GE lines use, are tried before anything else.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from npuwatch.bounded_numbers import field_int
from npuwatch.records import Record

_FUNC = r"[A-Za-z_~][\w~.<>]*(?:::[\w~.<>]+)*(?:\(\))?"
_PATH = r"[^\[\]\s:]+"

# `[file:line]` as CANN prints it: a basename now, a relative build path in 2020/2021 builds.
_ORIGIN = re.compile(r"\[(" + _PATH + r"):([0-9]+)\]")
# B1 `TID Func:msg` and B2 ` TID Func: msg` (one process switches between them by level).
_TID_FUNC = re.compile(r" ?([0-9]+) (" + _FUNC + r"):(?!:) ?")


def _style(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("FUNC", _FUNC).replace("PATH", _PATH))


# After `[file:line]`, when the text starts with a digit or a space.
_SPACED_STYLES = (
    # FMK: the logging wrapper's `[file:line]`, then `[TF_ADAPTER] [file:line] msg`
    _style(r" \[(?P<sub>[A-Z_]+)\] \[(?P<file>PATH):(?P<line>[0-9]+)\] ?"),
    _style(r" ?\[(?P<tid>[0-9]+)\]"),  # B4 ` [TID][Stage][Tag]msg` (HCCL 2023+)
    _style(r" ?(?:>>> )?\(tid:(?P<tid>[0-9]+)\) ?"),  # B9 ` >>> (tid:N) msg` (PROFILING)
    _style(r" (?P<func>FUNC)\] ?"),  # MindSpore's own logger: `[path:line] Func] msg`
    _style(r" ?(?P<tid>[0-9]+) "),  # `TID msg` without a function (TEFUSION TbeInit)
    _style(r" (?P<func>FUNC): "),  # firmware ` Func: msg`
)
# After `[file:line]`, when the text starts with `[`.
_BRACKET_STYLES = (
    _style(r"\[(?P<tid>[0-9]+)\]\[[0-9]+\](?P<func>FUNC):(?!:) ?"),  # B5 2020 `[TID][TID]Func:`
    _style(r"\[(?P<tid>[0-9]+)\]"),  # B4 `[TID][Stage]msg`
    _style(r"\[tid:(?P<tid>[0-9]+)\](?:>>> )? ?"),  # B6/B8 `[tid:N] msg`, `[tid:N]>>> msg`
    _style(r"\[(?P<func>FUNC)\]\[tid:(?P<tid>[0-9]+)\] ?"),  # B6 `[Func][tid:N] msg`
    _style(r"\[(?P<tag>EVENT|status:\w+)\](?P<tid>[0-9]+) (?P<func>FUNC):(?!:) ?"),  # B3
    # B11 2025: `[drv_log_user.c:621][ascend][curpid:PID,TID][drv][devmm][func]msg`
    _style(
        r"\[ascend\]\[curpid: ?-?[0-9]+, ?(?P<tid>[0-9]+)\]\[\w+\]\[(?P<sub>\w+)\]"
        r"\[(?P<func>FUNC)(?: [0-9]+)?\]"
    ),
    # B12 `[submodule] [func line] msg`; the sub-module is lower case (devmm, devmng, hdc,
    # bufmng), which tells it from tags such as `[Dump][Exception]`.
    _style(r"\[(?P<sub>[a-z][a-z0-9_]*)\] ?\[(?P<func>FUNC)(?: [0-9]+)?\] ?"),
    _style(r"\[(?P<sub>\w+)\]\[(?P<func>FUNC):[0-9]+\]\[tid:(?P<tid>[0-9]+)\] ?"),  # B6 ENGINE
    # B14 kernel messages relayed by sklogd:
    # `[uptime] [ascend] [ERROR] [mod] [func line] <comm:pid,tid> msg` (parts optional). The
    # header names the relaying process; the kernel task stays in the message.
    _style(
        r"\[ *[0-9]+\.[0-9]+\] (?:(?:\[ascend\] )?(?:\[[A-Z]+\] )?\[(?P<sub>\w+)\] "
        r"\[(?P<func>FUNC) [0-9]+\] <[^<>]*> ?)?"
    ),
    _style(r"\[(?P<tag>hccl-[^\[\]]+)\]\[(?P<rank>[0-9]+)\]"),  # B5 2022 `[hccl-...][rank]msg`
    _style(r"\[(?P<file>PATH):(?P<line>[0-9]+):(?P<func>FUNC)\](?P<tid>[0-9]+) ?"),  # OPLOG
    _style(r"\[(?P<func>FUNC) [0-9]+\] ?"),  # DEVMM `[func line] msg`
    _style(r"\[(?P<func>FUNC):[0-9]+\] ?(?:>>> )?"),  # HDC `[func:line] >>> msg`
)
_PAREN_STYLES = (_style(r"\(tid:(?P<tid>[0-9]+)\) ?"),)  # B10 `(tid:N) msg` (ATRACE)
_ALPHA_STYLES = (
    _style(r"(?:tid:(?P<tid>[0-9]+),)?(?P<func>FUNC)\([0-9]+\) ?: ?"),  # B13 HCCP/ROCE
)
# B7 TDT <= 2021: `[Tag] msg,[file.cpp:line:Func]PID` (a trailer after a comma).
_TDT_TRAILER = _style(r" ?,\[(?P<file>PATH):(?P<line>[0-9]+):(?P<func>FUNC)\](?P<tid>[0-9]+) ?")

# Bodies without `[file:line]` first. `then` marks styles after which a `[file:line]` tail
# follows and is parsed like any other.
_NO_ORIGIN_STYLES: dict[str, tuple[tuple[re.Pattern[str], bool], ...]] = {
    "[": (
        # B11 DRV user space: `[ascend][curpid: PID, TID][drv][devmm][func line]msg`
        (_BRACKET_STYLES[5], False),
        # B18 `[status:START] [file:line]msg` ([TRACE] records)
        (_style(r"\[(?P<tag>status:\w+)\] \[(?P<file>PATH):(?P<line>[0-9]+)\]"), True),
        # FMK `[TF_ADAPTER] [file:line] msg`
        (_style(r"\[(?P<sub>[A-Z_]+)\] \[(?P<file>PATH):(?P<line>[0-9]+)\] ?"), True),
    ),
    "0": (
        # B15 TSCH: `SEQ (cpuid:N) path:line func: msg`, `SEQ (dieid:N,cpuid:N) [file:line] func:`
        (
            _style(
                r"[0-9]+ \((?:dieid:[0-9]+,)?cpuid:[0-9]+\) \[?(?P<file>PATH):(?P<line>[0-9]+)\]? "
                r"(?:(?P<func>FUNC): ?)?"
            ),
            False,
        ),
        # TSCH/IMU without a source: `SEQ (cpuid:N) [DMP] msg`
        (_style(r"[0-9]+ \((?:dieid:[0-9]+,)?cpuid:[0-9]+\) (?:\[(?P<sub>\w+)\] ?)?"), False),
        # B17 IMP: `SEQ (device_id:N die_id:N) [IMP] msg`
        (
            _style(
                r"[0-9]+ \(device_id:(?P<device>[0-9]+) die_id:[0-9]+\) (?:\[(?P<sub>\w+)\] ?)?"
            ),
            False,
        ),
    ),
    # B16 LPM: `(dieid:N) [file.c line] msg`
    "(": ((_style(r"\(dieid:[0-9]+\) \[(?P<file>[^\[\]\s]+) (?P<line>[0-9]+)\] ?"), False),),
}
FIELD_MARKERS = MappingProxyType({"rank": ("[hccl-",), "device": ("device_id", "deviceId=")})
"""The texts without one of which no style above, and no `device_id=N` of the message, yields
the field (`Record.body_markers`)."""

_DEVICE_IN_MESSAGE = re.compile(r"\b(?:device_id|deviceId)=([0-9]{1,5})\b")
"""The runtime's and the driver interface's own words for the process's device, in the message
(`Task run failed, device_id=3, stream_id=2`, `halMemAlloc failed: deviceId=6, …`): the device of
a record whose header and body style do not say it. (The kernel's `devid=` is a physical or
virtual-function id, and is left alone.)"""
_NO_DEVICE = 65535

# Leading tags of the message: `[INIT][DEFAULT]`, `[InitChannelStage][RunFailed]`, `[HCCL_ENV]`.
_TAGS = re.compile(r" ?((?:\[[A-Za-z_][\w :]{0,39}\])+) ?")
_TAG_SPLIT = re.compile(r"\[([^\[\]]+)\]")


def parse_body(record: Record, body: str) -> None:
    """Fill origin, thread, function, sub-module, tags and message of `record` from `body`,
    and its device where the style or the message says it."""
    _parse_styles(record, body)
    values = record.__dict__
    if values.get("device") is None and ("device_id=" in body or "deviceId=" in body):
        found = _DEVICE_IN_MESSAGE.search(body)
        if found is not None:
            device = int(found[1])
            values["device"] = device if device < _NO_DEVICE else None


def _parse_styles(record: Record, body: str) -> None:
    origin = _ORIGIN.match(body)
    if origin is not None:
        record.origin_file = origin[1]
        record.origin_line = field_int(record, origin[2])
        _parse_tail(record, body[origin.end() :])
        return
    first = body[:1]
    key = "0" if first.isdigit() else first
    for pattern, then_tail in _NO_ORIGIN_STYLES.get(key, ()):
        match = pattern.match(body)
        if match is not None:
            _apply(record, match)
            rest = body[match.end() :]
            if then_tail:
                _parse_tail(record, rest)
            else:
                _set_message(record, rest)
            return
    _set_message(record, body)


def _parse_tail(record: Record, tail: str) -> None:
    """Parse what follows `[file:line]`."""
    first = tail[:1]
    styles: tuple[re.Pattern[str], ...]
    if first.isdigit() or first == " ":
        match = _TID_FUNC.match(tail)
        if match is not None:
            record.thread_id = field_int(record, match[1])
            record.function = match[2]
            _set_message(record, tail[match.end() :])
            return
        styles = _SPACED_STYLES
    elif first == "[":
        styles = _BRACKET_STYLES
    elif first == "(":
        styles = _PAREN_STYLES
    elif first.isalpha():
        styles = _ALPHA_STYLES
    else:
        styles = ()
    for pattern in styles:
        match = pattern.match(tail)
        if match is not None:
            _apply(record, match)
            _set_message(record, tail[match.end() :])
            return
    trailer = _TDT_TRAILER.search(tail)
    if trailer is not None:
        _apply(record, trailer)
        _set_message(record, tail[: trailer.start()] + tail[trailer.end() :])
        return
    _set_message(record, tail)


def _apply(record: Record, match: re.Match[str]) -> None:
    """Copy the named groups of a body style onto the record."""
    for name, value in match.groupdict().items():
        if value is None:
            continue
        if name == "tid":
            record.thread_id = field_int(record, value)
        elif name == "func":
            record.function = value
        elif name == "sub":
            record.submodule = value
        elif name == "file":
            record.origin_file = value
        elif name == "line":
            record.origin_line = field_int(record, value)
        elif name == "tag":
            # Read through vars(): reading an unset body field would derive the fields now.
            tags = vars(record).get("tags")
            record.tags = [value] if tags is None else [*tags, value]
        elif name == "rank":
            record.rank = field_int(record, value)
        elif name == "device":
            record.device = field_int(record, value)


def _set_message(record: Record, message: str) -> None:
    """Set the message, moving its leading tags (`[INIT][DEFAULT]` ...) to `record.tags`."""
    if message[:1] == "[" or message[:2] == " [":
        match = _TAGS.match(message)
        if match is not None:
            tags = _TAG_SPLIT.findall(match[1])
            earlier = vars(record).get("tags")
            record.tags = tags if earlier is None else earlier + tags
            message = message[match.end() :]
    elif message[:1] == " ":
        message = message[1:]
    record.message = message
