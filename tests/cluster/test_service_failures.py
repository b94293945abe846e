"""The correlator with no engine to talk to: it keeps trying, says so once a round, and its
read lag says for how long (what NpuwatchCorrelatorFailing watches)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.commands.correlate_run import ROUND_GRACE_S
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


def test_a_stop_during_a_round_that_hangs_on_the_engine_ends_the_service_within_the_grace(
    tmp_path: Path,
) -> None:
    """A node that takes a request and never answers (a hung JVM): the round waits on it for
    the whole request timeout (here 10 minutes), and SIGTERM still ends the service within
    ROUND_GRACE_S, with one line saying so and exit 0."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        port = hung.getsockname()[1]
        config = tmp_path / "correlator.toml"
        config.write_text(
            '[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\n'
            f'hosts = ["http://127.0.0.1:{port}"]\ntimeout = "600s"\n'
            '[correlate]\nlisten = "127.0.0.1:0"\n',
            "utf-8",
        )
        service = subprocess.Popen(
            [sys.executable, "-m", "npuwatch", "correlate", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            hung.settimeout(60)
            taken, _ = hung.accept()  # the first round's first request, never answered
            with taken:
                time.sleep(0.5)
                service.send_signal(signal.SIGTERM)
                asked = time.monotonic()
                _, err = service.communicate(timeout=ROUND_GRACE_S + 30)
                took = time.monotonic() - asked
        finally:
            if service.poll() is None:
                service.kill()
                service.communicate()
    said = err.decode()
    assert service.returncode == 0, said
    assert ROUND_GRACE_S - 1 <= took < ROUND_GRACE_S + 30
    (warning,) = [line for line in said.splitlines() if "WARNING" in line]
    assert "stopping without the round under way" in warning
    assert "Traceback" not in said
