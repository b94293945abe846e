"""A bundled multi-host collection journaled by real agents, one a host: the input of the
correlator's commands (`correlate --journal`, `--once`, `incident list|show`).

Each host's agent runs in this process (the agent of the unit, built from its configuration)
over that host's folder of `fixtures/collective/first-error-not-timeout`, until its journal holds
every collective event that `scan`'s extractor finds in the same files, and is stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timezone
from pathlib import Path

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import load_config
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers import LocalClock, parse_bytes
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent
from tests.agent.harness import wait_until
from tests.conftest import REPO

COLLECTION = REPO / "fixtures" / "collective" / "first-error-not-timeout"
HOSTS = ("host-a", "host-b")


def agent_config(work: Path, host: str, sinks: str = "") -> str:
    return f"""
[agent]
host_name = "{host}"
state_directory = "{work / host / "state"}"
timezone = "UTC"
[sources]
roots = ["{COLLECTION / host / "ascend" / "log"}"]
rescan_interval = "300ms"
idle_flush = "300ms"
[journal]
commit_interval = "50ms"
sync = "normal"
[devices]
enabled = false
[sinks.prometheus]
enabled = false
{sinks}
"""


def events_scan_finds(host: str) -> int:
    """The collective events of `host`'s files, as `scan` extracts them."""
    found = 0
    for path in sorted((COLLECTION / host).rglob("*.log")):
        records = parse_bytes(path.read_bytes(), LocalClock(timezone.utc), str(path), host)
        extractor = CollectiveExtractor()
        items = extractor.feed(records) + extractor.finish()
        found += sum(isinstance(item, CollectiveEvent) for item in items)
    return found


def collective_rows(state: Path) -> set[str]:
    """The ids of the collective events an agent journaled."""
    ids: set[str] = set()
    if not (state / "journal").is_dir():
        return ids
    with JournalReader(state / "journal") as reader:
        position = Position()
        while rows := reader.event_rows_after(position, 512):
            ids.update(id_ for _, id_, document in rows if '"collective"' in document)
            position = rows[-1][0]
    return ids


def journal_hosts(
    work: Path,
    sinks: str = "",
    shipped: Callable[[str, Path], bool] | None = None,
    wait_s: float = 60.0,
) -> dict[str, Path]:
    """Every host's agent run over its logs until it journaled what scan finds (and, with
    `shipped`, until that says the host's documents are in the engine); the state directories,
    by host."""
    return {host: _journal_host(work, host, sinks, shipped, wait_s) for host in HOSTS}


def _journal_host(
    work: Path, host: str, sinks: str, shipped: Callable[[str, Path], bool] | None, wait_s: float
) -> Path:
    path = work / f"{host}.toml"
    path.write_text(agent_config(work, host, sinks), "utf-8")
    agent = Agent(build(load_config(path, {}), {}), SelfMetrics())
    agent.start()
    state = work / host / "state"
    expected = events_scan_finds(host)
    try:
        assert agent.wait_started(10)
        wait_until(lambda: len(collective_rows(state)) >= expected, wait_s)
        if shipped is not None:
            wait_until(lambda: shipped(host, state), wait_s)
    finally:
        assert agent.stop(timeout=30)
    assert len(collective_rows(state)) == expected > 0
    return state
