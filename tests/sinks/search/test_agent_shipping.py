"""The real agent shipping to the real OpenSearch node: `npuwatch es setup|check`, kill -9
while shipping loses nothing and duplicates nothing, nor does kill -9 while the engine is
down, and the agent's log stays quiet."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opensearchpy.exceptions import TransportError

from npuwatch.sinks.search.engine import Connection, SearchEngine, status_of
from npuwatch.sinks.search.engines import connect
from tests.agent.harness import plog_line, plog_path
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import install_template, journal_counts
from tests.sinks.search.es_adapter import ElasticsearchFace

FILES = 4
LINES = 6000
ERROR_EVERY = 500


def write_config(
    tmp_path: Path,
    node: RunningNode,
    namespace: str,
    *,
    url: str | None = None,
    flavour: str = "opensearch",
) -> Path:
    """The agent's configuration, shipping to the node (or to `url`, with `flavour`)."""
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        f"""
[agent]
state_directory = "{tmp_path / "state"}"
host_name = "node-1"
timezone = "UTC"

[sources]
roots = ["{tmp_path / "logs"}"]
idle_flush = "500ms"

[sinks.elasticsearch]
enabled = true
flavour = "{flavour}"
hosts = ["{url or node.url}"]
namespace = "{namespace}"
batch_documents = 100

[sinks.prometheus]
listen = "127.0.0.1:0"
""",
        encoding="utf-8",
    )
    return config


def npuwatch(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npuwatch", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def start_agent(
    config: Path, log_level: str = "ERROR", stderr: int | None = None
) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if key != "NOTIFY_SOCKET"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "npuwatch",
            "agent",
            "--config",
            str(config),
            "--log-level",
            log_level,
        ],
        env=env,
        stderr=stderr,
    )


def stream_counts(engine: SearchEngine, namespace: str) -> tuple[int, int]:
    # A backing index the agent has just created answers 503 until its shard has started.
    for _ in range(50):
        try:
            records = engine.count(f"logs-ascend.plog-{namespace},logs-ascend.device-{namespace}")
            return records, engine.count(f"logs-ascend.events-{namespace}")
        except TransportError as error:
            if status_of(error) != 503:
                raise
            time.sleep(0.2)
    raise AssertionError("the data streams kept answering 503 for 10 s")


@pytest.mark.integration
def test_setup_installs_the_template_and_check_reports_what_is_missing(
    node: RunningNode, tmp_path: Path
) -> None:
    config = write_config(tmp_path, node, "setupcheck")
    before = npuwatch("es", "check", config=config)
    assert before.returncode == 1
    assert "index template npuwatch-logs-ascend-setupcheck is missing" in before.stderr
    setup = npuwatch("es", "setup", "--replicas", "0", config=config)
    assert "index template npuwatch-logs-ascend-setupcheck: installed" in setup.stdout
    # This node has no Index State Management plugin (it is not on Maven Central): setup says
    # so in one warning line (old data will not be deleted) and exits 0, every template
    # installed; so does check, so that a script tells it from a failure.
    assert setup.returncode == 0, setup.stderr
    (warning,) = setup.stderr.splitlines()
    assert warning.startswith("npuwatch: warning: lifecycle policy: ")
    assert "no Index State Management plugin" in warning
    after = npuwatch("es", "check", config=config)
    assert after.returncode == 0, after.stderr
    assert after.stderr.splitlines() == [warning]
    assert "index template npuwatch-logs-ascend-setupcheck: present" in after.stdout
    assert "connected: opensearch 2.19.6" in after.stdout


@pytest.mark.integration
def test_kill_9_while_shipping_loses_nothing_and_duplicates_nothing(
    node: RunningNode, tmp_path: Path
) -> None:
    namespace = "killed"
    config = write_config(tmp_path, node, namespace)
    assert "installed" in npuwatch("es", "setup", "--replicas", "0", config=config).stdout
    for pid in range(900, 900 + FILES):
        lines = [
            plog_line(pid, n, "ERROR" if n % ERROR_EVERY == 0 else "INFO", "notify wait timeout")
            for n in range(LINES)
        ]
        plog_path(tmp_path / "logs", pid).write_text("\n".join(lines) + "\n", encoding="utf-8")
    engine = connect(Connection("opensearch", (node.url,)))
    try:
        kills = 0
        agent = start_agent(config)
        deadline = time.monotonic() + 180
        # Kill it twice in the middle of shipping, then let it finish.
        while kills < 2 and time.monotonic() < deadline:
            shipped, _ = stream_counts(engine, namespace)
            if shipped > (kills + 1) * FILES * LINES // 4:
                agent.send_signal(signal.SIGKILL)
                agent.wait()
                kills += 1
                agent = start_agent(config)
            time.sleep(0.2)
        assert kills == 2, "shipping finished before the agent could be killed twice"
        records, events = journal_counts(tmp_path / "state" / "journal")
        while time.monotonic() < deadline:
            records, events = journal_counts(tmp_path / "state" / "journal")
            if records == FILES * LINES and stream_counts(engine, namespace) == (records, events):
                break
            time.sleep(0.5)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=60) == 0
        assert records == FILES * LINES
        assert events > 0
        assert stream_counts(engine, namespace) == (records, events)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        engine.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.integration
def test_kill_9_while_the_engine_is_down_loses_nothing_once_it_is_back(
    node: RunningNode, tmp_path: Path
) -> None:
    """RELIABILITY row 7, with the `elasticsearch` flavour (whose client raises on a refused
    connection): the engine's port answers nothing while the agent reads, journals and retries;
    the agent is killed; the engine comes back (es_adapter's face on that port) and a new agent
    ships every record and event exactly once."""
    namespace = "downkilled"
    port = free_port()
    config = write_config(
        tmp_path, node, namespace, url=f"http://127.0.0.1:{port}", flavour="elasticsearch"
    )
    engine = connect(Connection("opensearch", (node.url,)))
    install_template(engine, namespace)
    lines = [
        plog_line(800, n, "ERROR" if n % ERROR_EVERY == 0 else "INFO", "notify wait timeout")
        for n in range(LINES)
    ]
    plog_path(tmp_path / "logs", 800).write_text("\n".join(lines) + "\n", encoding="utf-8")
    journal = tmp_path / "state" / "journal"
    agent = start_agent(config)
    face: ElasticsearchFace | None = None
    try:
        deadline = time.monotonic() + 120
        # Every line journaled, and the counts standing for 2 s: the last event closes once
        # the file has been quiet for twice the idle flush (its window by the wall clock).
        counts, since = (-1, -1), time.monotonic()
        while time.monotonic() < deadline:
            now = journal_counts(journal) if journal.exists() else (0, 0)
            if now != counts:
                counts, since = now, time.monotonic()
            elif counts[0] == LINES and time.monotonic() - since >= 2.0:
                break
            time.sleep(0.3)
        records, events = journal_counts(journal)
        assert (records, events > 0) == (LINES, True)
        time.sleep(1)  # the sink is retrying against the closed port
        assert agent.poll() is None, "the agent died while the engine was down"
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        assert stream_counts(engine, namespace) == (0, 0)
        face = ElasticsearchFace(node.url, port=port)
        agent = start_agent(config)
        while stream_counts(engine, namespace) != (records, events):
            assert time.monotonic() < deadline, stream_counts(engine, namespace)
            time.sleep(0.3)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=60) == 0
        assert journal_counts(journal) == (records, events)  # nothing read twice either
        assert stream_counts(engine, namespace) == (records, events)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        if face is not None:
            face.close()
        engine.close()


@pytest.mark.integration
def test_shipping_at_info_logs_the_agents_lines_not_one_per_bulk_request(
    node: RunningNode, tmp_path: Path
) -> None:
    """The search clients log every request at INFO; on a host that ships all day, that would
    be a line a second in its journal."""
    namespace = "quiet"
    config = write_config(tmp_path, node, namespace)
    assert "installed" in npuwatch("es", "setup", "--replicas", "0", config=config).stdout
    lines = [plog_line(700, n, "INFO", "StreamSynchronize") for n in range(1000)]
    plog_path(tmp_path / "logs", 700).write_text("\n".join(lines) + "\n", encoding="utf-8")
    engine = connect(Connection("opensearch", (node.url,)))
    agent = start_agent(config, log_level="INFO", stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while stream_counts(engine, namespace)[0] < len(lines) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert stream_counts(engine, namespace)[0] == len(lines)  # 10 bulk requests at least
    finally:
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=60)
        engine.close()
    logged = stderr.decode()
    assert "npuwatch: INFO" in logged  # the agent's own lines are there
    assert "_bulk" not in logged, logged[-2000:]
