"""What a CANN log file's path says: log kind, channel, device, pid and creation time.

CANN encodes a lot in its paths (formats doc §5): `debug/plog/plog-<pid>_<YYYYMMDDhhmmssmmm>.log`,
`run/device-<id>/device-<pid>_<ts>.log`, `device-os_<ts>.log`, `event_<ts>.log`, and the older
`slog/...` layouts. This is a pure function of the path string.
"""

from __future__ import annotations

import re
from functools import lru_cache

from npuwatch.bounded_numbers import fitting_int
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import SourceInfo

_CHANNELS = ("debug", "run", "security")
_PLOG = re.compile(r"plog[-_](?:(?P<pid>\d+)_)?(?P<ts>\d{17})")
_PLOG_RENAMED = re.compile(r"plog-(?:parser-)?(?P<pid>\d+)[-_.]")
"""A plog whose stamp is not CANN's 17 digits: renamed by whoever collected it
(`plog-514_<label>.log`), or one of FaultDiag's per-process extracts
(`plog-parser-<pid>-<0|1>.log`). The pid still names the file's owner."""
_DEVICE_APP = re.compile(r"device-app-(?P<pid>\d+)(?:_(?P<ts>\d{17}))?")
_DEVICE = re.compile(r"device-(?P<num>\d+)_(?P<ts>\d{17})")
_DEVICE_RENAMED = re.compile(r"device-(?P<num>\d+)_")
_DEVICE_OS = re.compile(r"device-os_(?P<ts>\d{17})")
_EVENT = re.compile(r"event_(?P<ts>\d{17})")
_HOST = re.compile(r"host-\d+_(?P<ts>\d{17})")
_DEVICE_DIR = re.compile(r"^(?:device|dev-os)-(\d+)$")
_LOWEST_APPLICATION_PID = 64
"""Linux pids below this belong to kernel threads: a `device-N_<ts>.log` whose N is that small
and equals its folder's device id is a firmware log, not an application's."""


@lru_cache(maxsize=4096)
def describe_path(path: str | None, clock: LocalClock, host: str | None = None) -> SourceInfo:
    """Read log kind, channel, device id, pid and creation time from a log file's path.
    Cached (SourceInfo is frozen): shipping re-parses each journaled record with its file's
    path, and reading the path again was a fifth of the cost of a document."""
    parts = [part for part in (path or "").replace("\\", "/").split("/") if part]
    if not parts:
        return SourceInfo(path=path, host=host)
    name = parts[-1]
    folders = parts[:-1]
    channel = next((part for part in reversed(folders) if part in _CHANNELS), None)
    device = _device_from_folders(folders)
    kind = "other"
    pid: int | None = None
    stamp: str | None = None

    if name.startswith("slogdlog"):
        kind = "slogd"
    elif (match := _DEVICE_APP.match(name)) or (
        folders and (match := _DEVICE_APP.fullmatch(folders[-1]))
    ):
        kind, pid, stamp = "device-app", fitting_int(match["pid"]), match["ts"]
        if stamp is None:
            stamp_match = re.search(r"_(\d{17})", name)
            stamp = stamp_match[1] if stamp_match else None
    elif match := _PLOG.match(name):
        kind, stamp = "plog", match["ts"]
        pid = fitting_int(match["pid"]) if match["pid"] else None
    elif match := _PLOG_RENAMED.match(name):
        kind, pid = "plog", fitting_int(match["pid"])
    elif match := _DEVICE_OS.match(name):
        kind, stamp = "device-os", match["ts"]
    elif match := _EVENT.match(name):
        kind, stamp = "event", match["ts"]
    elif (match := _DEVICE.match(name)) or (
        device is not None and (match := _DEVICE_RENAMED.match(name))
    ):
        # A number too large for any column names no pid or device: the path still says so.
        # (A device log renamed by its collector is known by its `device-N` folder.)
        number = fitting_int(match["num"])
        stamp = match.groupdict().get("ts")
        firmware = "firmware" in folders or (
            number is not None
            and number < _LOWEST_APPLICATION_PID
            and device is not None
            and number == device
        )
        if firmware:
            kind = "firmware"
            device = number if device is None else device
        else:
            kind, pid = "device", number
    elif match := _HOST.match(name):
        kind, stamp = "plog", match["ts"]
    elif "device-os" in folders:
        kind = "device-os"

    created = _file_stamp_us(stamp, clock) if stamp else None
    return SourceInfo(
        path=path,
        host=host,
        kind=kind,
        channel=channel,
        device=device,
        pid=pid,
        created_us=created,
    )


def _device_from_folders(folders: list[str]) -> int | None:
    for folder in reversed(folders):
        match = _DEVICE_DIR.match(folder)
        if match:
            return fitting_int(match[1])
    return None


def _file_stamp_us(stamp: str, clock: LocalClock) -> int | None:
    """`YYYYMMDDhhmmssmmm` (local time) to epoch microseconds."""
    try:
        return clock.local_us(
            int(stamp[0:4]),
            int(stamp[4:6]),
            int(stamp[6:8]),
            int(stamp[8:10]),
            int(stamp[10:12]),
            int(stamp[12:14]),
            int(stamp[14:17]) * 1000,
        )
    except ValueError:
        return None
