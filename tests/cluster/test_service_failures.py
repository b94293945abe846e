"""The correlator with no engine to talk to: it keeps trying, says so once a round, and its
read lag says for how long (what NpuwatchCorrelatorFailing watches)."""

from __future__ import annotations

import socket

import pytest

from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.sinks.search.engine import Connection
from npuwatch.sinks.search.engines import connect


def closed_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_rounds_against_an_unreachable_engine_fail_are_counted_and_the_lag_grows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    metrics = CorrelatorMetrics()
    engine = connect(Connection("opensearch", (f"http://127.0.0.1:{closed_port()}",), timeout_s=2))
    service = CorrelatorService(engine, CorrelateSettings(namespace="gone"), metrics, wall=clock)
    try:
        for _ in range(3):
            clock.now += 600
            assert service.attempt() is None
    finally:
        engine.close()
    assert metrics.registry.get_sample_value("npuwatch_correlate_read_lag_seconds") == 1800
    assert (
        metrics.registry.get_sample_value("npuwatch_correlate_errors_total", {"stage": "read"}) == 3
    )
    failed = [r for r in caplog.records if r.getMessage().startswith("correlation round failed")]
    # Said once, in a readable line (not a traceback, not the client's nested exceptions),
    # not at every round while the engine is down.
    (line,) = [r.getMessage() for r in failed]
    assert line.startswith("correlation round failed (connection refused")
    assert "\n" not in line and "Error(" not in line
