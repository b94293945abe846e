"""Shared test helpers: fixture locations, the real-log corpus, a parser in a fixed zone."""

from __future__ import annotations

from datetime import timezone
from pathlib import Path

import pytest

from npuwatch.parsers import LocalClock, parse_bytes
from npuwatch.records import Record

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
TREES = FIXTURES / "trees"
GOLDEN = FIXTURES / "golden"
REAL_LOGS = REPO.parent / "shared" / "real-logs"


def utc_clock() -> LocalClock:
    return LocalClock(timezone.utc)


def parse(data: bytes | str, path: str | None = None) -> list[Record]:
    """Parse a whole stream in UTC (so that expected times are written as they appear)."""
    raw = data.encode() if isinstance(data, str) else data
    return parse_bytes(raw, utc_clock(), path=path)


def parse_one(line: str, path: str | None = None) -> Record:
    records = parse(line + "\n", path)
    assert len(records) == 1, [r.original for r in records]
    return records[0]


def real_log_files() -> list[Path]:
    if not REAL_LOGS.is_dir():
        return []
    return sorted(REAL_LOGS.glob("*.log"))


@pytest.fixture
def real_logs() -> list[Path]:
    files = real_log_files()
    if not files:
        pytest.skip("../shared/real-logs is not present on this machine")
    return files
