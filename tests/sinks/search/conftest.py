"""A real OpenSearch node (tests/opensearch_node) for the search-engine sink's tests."""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from npuwatch.journal.block import decode_block
from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.follower import JournalFollower
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink, ShipSettings
from npuwatch.sinks.search.streams import (
    INGESTED_PIPELINE,
    events_template_name,
    state_template_name,
    template_name,
)
from npuwatch.sinks.search.templates import (
    events_template,
    index_template,
    ingested_pipeline,
    state_template,
)
from tests.agent.harness import Harness
from tests.opensearch_node.launcher import RunningNode

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "trees"


@pytest.fixture
def engine(node: RunningNode) -> Iterator[SearchEngine]:
    search = connect(Connection("opensearch", (node.url,)))
    try:
        yield search
    finally:
        search.client.indices.delete_data_stream(name="logs-ascend.*", ignore=[404])
        search.close()


@dataclass
class Journaled:
    """A fixture tree followed by the real agent into a journal."""

    directory: Path
    records: int
    events: int
    states: int = 0
    """Documents replaced by id (process topology, heartbeats): the latest version of each."""


def journal_counts(directory: Path) -> tuple[int, int]:
    records = events = 0
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            records += sum(block.count for _, block in page)
            position = page[-1][0]
        position = Position()
        while rows := reader.events_after(position, 256):
            events += len(rows)
            position = rows[-1][0]
    return records, events


@pytest.fixture(scope="session")
def hccl_journal(tmp_path_factory: pytest.TempPathFactory) -> Journaled:
    """The HCCL-timeout tree (8 ranks, 2 hosts) journaled by the agent, once per session."""
    work = tmp_path_factory.mktemp("hccl-agent")
    harness = Harness(work)
    shutil.copytree(FIXTURES / "hccl-timeout", harness.logs, dirs_exist_ok=True)
    harness.start()
    directory = harness.state / "journal"
    last, stable = (-1, -1), 0
    while stable < 6:  # until the counts stop moving (idle flush included)
        threading.Event().wait(0.5)
        counts = journal_counts(directory) if directory.exists() else (0, 0)
        stable = stable + 1 if counts == last and counts[0] > 0 else 0
        last = counts
    harness.stop()
    return Journaled(directory, *journal_counts(directory), journal_states(directory))


def journal_states(directory: Path) -> int:
    """The states the journal holds, each id once (what shipping it from the start sends)."""
    with JournalReader(directory) as reader:
        return len(reader.latest_states())


def journal_levels(directory: Path) -> Counter[str | None]:
    """How many records of each level the journal holds."""
    levels: Counter[str | None] = Counter()
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            for _, block in page:
                levels.update(stored.level for stored in decode_block(block.payload))
            position = page[-1][0]
    return levels


def install_template(engine: SearchEngine, namespace: str = "default") -> None:
    """What `npuwatch es setup` installs for `namespace`, without replicas (one node): the
    ingest pipeline and the templates of the data streams, the events and the topology."""
    engine.put_pipeline(INGESTED_PIPELINE, ingested_pipeline())
    engine.put_index_template(
        template_name(namespace), index_template(namespace, "opensearch", replicas=0)
    )
    engine.put_index_template(
        events_template_name(namespace), events_template(namespace, "opensearch", replicas=0)
    )
    engine.put_index_template(state_template_name(namespace), state_template(namespace, replicas=0))


def forget_namespace(engine: SearchEngine, namespace: str) -> None:
    """A namespace's data streams and indices off the node (a node holds at most 1,000
    shards)."""
    pattern = f"logs-ascend.*-{namespace}"
    engine.client.indices.delete_data_stream(name=pattern, ignore=[404])
    engine.client.indices.delete(index=pattern, ignore=[404])


@contextmanager
def namespace_on(node: RunningNode, namespace: str) -> Iterator[SearchEngine]:
    """A client of the node with `namespace`'s templates installed; the namespace is removed
    and the client closed afterwards."""
    made = connect(Connection("opensearch", (node.url,)))
    install_template(made, namespace)
    try:
        yield made
    finally:
        forget_namespace(made, namespace)
        made.close()


def make_shipper(
    engine: SearchEngine,
    journal: Path,
    state: Path,
    namespace: str = "default",
    skipped_levels: frozenset[str] = frozenset(),
    stop: threading.Event | None = None,
) -> tuple[JournalFollower, SelfMetrics, DeadLetters]:
    """The search sink of `engine`, followed from the cursor in `state` (pumped by hand, or
    started as the agent does)."""
    metrics = SelfMetrics()
    dead = DeadLetters(state / "dead-letter" / "elasticsearch.jsonl")
    sink = SearchSink(
        engine,
        metrics,
        dead,
        ShipSettings(
            namespace=namespace,
            host="node-1",
            initial_backoff_s=0.2,
            max_backoff_s=1,
            skipped_levels=skipped_levels,
        ),
    )
    follower = JournalFollower(
        sink,
        journal,
        CursorStore(state / "cursors.json"),
        threading.Condition(),
        stop or threading.Event(),
        metrics,
    )
    return follower, metrics, dead


def ship_all(shipper: JournalFollower) -> None:
    while shipper.pump():
        pass
