"""Local wall-clock times without a zone, turned into UTC microseconds since the epoch.

CANN writes `YYYY-MM-DD-HH:MM:SS.mmm.uuu` in the host's local time and says nothing about the
zone. Converting a datetime per line is the most expensive thing a parser could do, so the
conversion is done once per minute of wall time and cached; the seconds and fractions are added
as integers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from npuwatch.records import EPOCH

PRE_CLOCK_SYNC_YEAR = 2000
"""Device clocks start at 1970 until they are synced; anything before this year is such a time."""

_MAX_CACHED_MINUTES = 100_000
_EARLIEST_US = (datetime(1, 1, 2, tzinfo=timezone.utc) - EPOCH) // timedelta(microseconds=1)
_LATEST_MINUTE_US = (datetime(9999, 12, 31, 23, 58, tzinfo=timezone.utc) - EPOCH) // timedelta(
    microseconds=1
)
"""The range of minutes a record may be dated in: a minute and its 60 (leap) seconds after it
must be a time Python can print in UTC, whatever the zone moved it by (year 1 to 9999)."""


def host_timezone() -> tzinfo:
    """The host's zone: $TZ if it names a zone, else /etc/localtime, else UTC."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    localtime = Path("/etc/localtime")
    try:
        with localtime.open("rb") as handle:
            return ZoneInfo.from_file(handle, key="localtime")
    except (OSError, ValueError):
        return timezone.utc


def resolve_timezone(name: str | None) -> tzinfo:
    """A zone by IANA name ("Asia/Shanghai", "UTC"), or the host's zone for None or "local".

    Raises ValueError with a message fit for the command line when the name is unknown.
    """
    if name is None or name == "local":
        return host_timezone()
    if name.upper() in {"UTC", "Z"}:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name such as Asia/Shanghai or UTC"
        ) from error


class LocalClock:
    """Converts local wall-clock fields to UTC epoch microseconds in one configured zone."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self.minutes: dict[object, int | None] = {}
        """Epoch microseconds of each local minute seen, keyed by its text or its fields."""

    def minute_us(
        self, key: object, year: int, month: int, day: int, hour: int, minute: int
    ) -> int | None:
        """Epoch microseconds of the start of a local minute, or None when the date is invalid.

        `key` is any hashable that identifies the minute for the caller (the text prefix of the
        timestamp on the hot path), so that the cache is hit before any integer is parsed.
        """
        cached = self.minutes.get(key, -1)
        if cached != -1:
            return cached
        value: int | None
        try:
            moment = datetime(year, month, day, hour, minute, tzinfo=self.zone)
            value = int(moment.timestamp()) * 1_000_000
        except (ValueError, OverflowError):  # 30 February, hour 25, year 0
            value = None
        if value is not None and not _EARLIEST_US <= value <= _LATEST_MINUTE_US:
            value = None  # 9999-12-31 23:59 in a zone behind UTC is in the year 10000 there
        if len(self.minutes) >= _MAX_CACHED_MINUTES:
            self.minutes.clear()
        self.minutes[key] = value
        return value

    def slog_minute_us(self, prefix: str) -> int | None:
        """Epoch microseconds of a CANN minute prefix such as `2025-01-10-17:53` (or with a
        space instead of the dash between date and time)."""
        cached = self.minutes.get(prefix, -1)
        if cached != -1:
            return cached
        try:
            fields = (
                int(prefix[0:4]),
                int(prefix[5:7]),
                int(prefix[8:10]),
                int(prefix[11:13]),
                int(prefix[14:16]),
            )
        except ValueError:
            self.minutes[prefix] = None
            return None
        return self.minute_us(prefix, *fields)

    def local_us(
        self,
        year: int,
        month: int,
        day: int,
        hour: int,
        minute: int,
        second: int,
        micro: int = 0,
    ) -> int | None:
        """Epoch microseconds of a full local time, or None when it is not a valid time."""
        if not 0 <= second <= 60 or not 0 <= micro < 1_000_000:
            return None
        base = self.minute_us((year, month, day, hour, minute), year, month, day, hour, minute)
        if base is None:
            return None
        return base + second * 1_000_000 + micro


def fields_us(clock: LocalClock, fields: Sequence[int], micro: int = 0) -> int | None:
    """Epoch microseconds of (year, month, day, hour, minute, second) in the clock's zone."""
    year, month, day, hour, minute, second = fields
    return clock.local_us(year, month, day, hour, minute, second, micro)


_FULL_DATE = re.compile(
    rb"(?<![0-9])(20[0-9]{2})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[-T ][0-9]{2}:[0-9]{2}"
)


def first_full_date_us(data: bytes) -> int | None:
    """Midnight UTC of the first date written with its year in `data` (`2025-09-14-09:37:31`,
    `2025-09-14 09:37:31`), or None. A file's own dated lines are a better source for the year of
    its year-less lines (c10's `[E914 09:37:31…]`) than its modification time, which a copy or a
    clone sets to today. A date that does not exist (`2023-02-29`) is passed over."""
    for match in _FULL_DATE.finditer(data):
        try:
            day = datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=timezone.utc)
        except ValueError:  # 30 February: the next date may be a real one
            continue
        return (day - EPOCH) // timedelta(microseconds=1)
    return None


def year_of(epoch_us: int) -> int | None:
    """The UTC year of an epoch-microsecond time (used to complete dates printed without one),
    or None for a time outside the years 1 to 9999 (a file's modification time can be)."""
    try:
        return (EPOCH + timedelta(microseconds=epoch_us)).year
    except OverflowError:
        return None
