"""Local wall time without a zone, stored as UTC."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from npuwatch.parsers.timestamps import LocalClock, resolve_timezone


def test_a_daylight_saving_zone_uses_the_offset_of_each_minute() -> None:
    clock = LocalClock(ZoneInfo("Europe/Berlin"))
    winter = clock.local_us(2025, 1, 15, 12, 0, 0)
    summer = clock.local_us(2025, 7, 15, 12, 0, 0)
    assert winter == int(datetime(2025, 1, 15, 11, tzinfo=timezone.utc).timestamp()) * 1_000_000
    assert summer == int(datetime(2025, 7, 15, 10, tzinfo=timezone.utc).timestamp()) * 1_000_000


def test_an_impossible_date_gives_no_time_instead_of_an_error() -> None:
    clock = LocalClock(timezone.utc)
    assert clock.local_us(2025, 2, 30, 0, 0, 0) is None
    assert clock.slog_minute_us("2025-13-01-00:00") is None
    assert clock.slog_minute_us("20x5-01-01-00:00") is None


def test_unknown_zone_names_are_rejected_with_advice() -> None:
    with pytest.raises(ValueError, match="IANA name"):
        resolve_timezone("Mars/Olympus")
    assert resolve_timezone("UTC") is timezone.utc
