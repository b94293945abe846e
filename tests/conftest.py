"""Shared test helpers: fixture locations, the real-log corpus, a parser in a fixed zone."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timezone
from pathlib import Path

import pytest

from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Record
from tests.opensearch_node.launcher import RunningNode, start_node
from tests.real_servers import real_server, unmarked_real_server_tests

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


@pytest.fixture(scope="session")
@real_server("a single-node OpenSearch (Java, tests/opensearch_node)")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    running = start_node(tmp_path_factory.mktemp("opensearch"))
    try:
        yield running
    finally:
        running.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = unmarked_real_server_tests(items)
    if problems:
        raise pytest.UsageError("\n".join(problems))


THREAD_GRACE_S = 5.0
"""How long a test's threads may take to end after it (a stopped agent's last joins)."""


@pytest.fixture(scope="session", autouse=True)
def rule_cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The commands the tests run (in process and as subprocesses) keep their rule cache in a
    folder of the session, not in the home of whoever runs the tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NPUWATCH_CACHE", str(tmp_path_factory.mktemp("npuwatch-cache")))
        yield


@pytest.fixture(autouse=True)
def no_thread_is_left_running() -> Iterator[None]:
    """Fail a test that leaves a thread of its own running (as watchdog's suite does): a thread
    that outlives its test is an agent, a sink or a server that was never stopped."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    while True:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    assert not left, f"threads left running after the test: {sorted(t.name for t in left)}"
