"""Local wall time without a zone, stored as UTC."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from npuwatch.parsers.timestamps import LocalClock, first_full_date_us, resolve_timezone, year_of


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


@pytest.mark.parametrize(
    ("text", "year"),
    [
        (
            b"[E914 09:37:31.000512402 x.ts:429] watchdog\n[ERROR] 2025-09-14-09:37:31 (PID:3300)",
            2025,
        ),
        (b"[INFO] GE(1,p):2024-12-31-23:59:59.999.000 [a.cc:1] x", 2024),
        (b"2026-01-02 03:04:05,678 - root - INFO - step 1", 2026),
        (b"2023-06-07T08:09:10Z ok", 2023),
        (b"no date here; 12025-09-14-09:37 is not one, nor 2025-13-01-00:00", None),
    ],
)
def test_the_first_date_with_a_year_gives_the_year_for_the_rest(
    text: bytes, year: int | None
) -> None:
    found = first_full_date_us(text)
    assert (None if found is None else year_of(found)) == year
