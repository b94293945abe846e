"""A bundled multi-host collection journaled by real agents, one a host: the input of the
correlator's commands (`correlate --journal`, `--once`, `incident list|show`).

Each host's agent runs in this process (the agent of the unit, built from its configuration)
over that host's folder of `fixtures/collective/first-error-not-timeout`, until its journal holds
every collective event and process document that `scan`'s extractor finds in the same files
(and, when asked, until they are in the search engine), and is stopped.
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
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent
from npuwatch.parsers.hccl.shipped import process_document_id
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from tests.agent.harness import wait_until
from tests.conftest import REPO

COLLECTION = REPO / "fixtures" / "collective" / "first-error-not-timeout"
HOSTS = ("host-a", "host-b")


def agent_config(work: Path, host: str, sinks: str = "", roots: Path | None = None) -> str:
    """A test agent's configuration: `host`'s state under `work`, its logs under `roots` (by
    default its folder of the collection), `sinks` added as they are."""
    logs = roots if roots is not None else COLLECTION / host / "ascend" / "log"
    return f"""
[agent]
host_name = "{host}"
state_directory = "{work / host / "state"}"
timezone = "UTC"
[sources]
roots = ["{logs}"]
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


def scan_finds(host: str) -> tuple[int, int]:
    """What `scan`'s extractor finds in `host`'s files: its collective events, and the process
    documents an agent makes of its facts (one per process and communicator) and its heartbeat."""
    events = 0
    documents: set[str] = set()
    for path in sorted((COLLECTION / host).rglob("*.log")):
        records = parse_bytes(path.read_bytes(), LocalClock(timezone.utc), str(path), host)
        extractor = CollectiveExtractor()
        for item in extractor.feed(records) + extractor.finish():
            if isinstance(item, CollectiveEvent):
                events += 1
            elif item.name != "heard":
                documents.add(process_document_id(host, item.process.pid, item.communicator))
    return events, len(documents) + 1


def journaled_states(state: Path) -> int:
    """The process documents and heartbeat an agent journaled."""
    if not (state / "journal").is_dir():
        return 0
    with JournalReader(state / "journal") as reader:
        return len(reader.latest_states())


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
    events, documents = scan_finds(host)
    try:
        assert agent.wait_started(10)
        wait_until(
            lambda: len(collective_rows(state)) >= events and journaled_states(state) >= documents,
            wait_s,
        )
        if shipped is not None:
            wait_until(lambda: shipped(host, state), wait_s)
    finally:
        assert agent.stop(timeout=30)
    assert len(collective_rows(state)) == events > 0
    assert journaled_states(state) == documents
    return state
