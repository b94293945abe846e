"""The topology index kept small against a real node: what the correlator forgets (processes
long gone, an agent long silent) is deleted, what is alive is kept however old its document,
a restarted correlator reads it, and a document an agent wrote again is not deleted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from npuwatch.cluster.forgetting import delete_forgotten
from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.parsers.hccl.model import Fact, ProcessKey
from npuwatch.parsers.hccl.shipped import TOPOLOGY_STREAM, Heartbeat, ProcessFacts
from npuwatch.sinks.search.engine import SearchEngine
from npuwatch.sinks.search.streams import state_index
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import namespace_on

pytestmark = pytest.mark.integration

NAMESPACE = "forget"
INDEX = state_index(TOPOLOGY_STREAM, NAMESPACE)
DAY_S = 86400.0


@pytest.fixture
def engine(node: RunningNode) -> Iterator[SearchEngine]:
    with namespace_on(node, NAMESPACE) as made:
        yield made


def process(host: str, pid: int, said_us: int) -> ProcessFacts:
    facts = ProcessFacts(host, pid, None)
    facts.add(Fact(ProcessKey(host, pid), "logic_device", pid % 16, said_us))
    return facts


def put(
    engine: SearchEngine, id_: str, document: dict[str, Any], ingested_ms: int | None = None
) -> None:
    """Through the ingest pipeline (ingested now), or as ingested at `ingested_ms`."""
    if ingested_ms is None:
        engine.client.index(index=INDEX, id=id_, body=document)
    else:
        document = {**document, "event": {**document["event"], "ingested": ingested_ms}}
        engine.client.index(index=INDEX, id=id_, body=document, params={"pipeline": "_none"})


def ids_in_index(engine: SearchEngine) -> set[str]:
    engine.refresh(INDEX)
    hits = engine.search(INDEX, {"size": 100, "_source": False})
    return {str(hit["_id"]) for hit in hits}


def correlator(engine: SearchEngine, metrics: CorrelatorMetrics) -> CorrelatorService:
    return CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), metrics)


def test_what_is_gone_is_deleted_what_is_alive_is_kept_and_read_again_at_a_restart(
    engine: SearchEngine,
) -> None:
    """Gone means the engine has not taken the document for a lookback (ingest time): the times
    in the logs say nothing of it (a backfill of weeks-old logs, a host whose clock is off)."""
    now_us = int(time.time() * 1e6)
    two_days_ago_ms = (now_us // 1000) - 2 * 86_400_000
    weeks_ago_us = now_us - int(21 * DAY_S * 1e6)
    gone = process("host-a", 1, now_us)  # shipped two days ago, its job ended
    long_running = process("host-a", 2, weeks_ago_us)  # said who it is at init, weeks ago
    recent = process("host-b", 3, now_us)
    backfill = process("host-d", 5, weeks_ago_us)  # logs weeks old, shipped just now
    # host-a's clock is a day behind; host-c's agent fell silent two days ago.
    alive = Heartbeat("host-a", now_us - int(DAY_S * 1e6), 30.0, {2: now_us})
    silent = Heartbeat("host-c", now_us, 30.0, {4: now_us})
    put(engine, gone.id, gone.to_document("1"), two_days_ago_ms)
    # Ingested three days ago: older than the lookback of the events, read all the same.
    put(engine, long_running.id, long_running.to_document("1"), (now_us // 1000) - 3 * 86_400_000)
    put(engine, recent.id, recent.to_document("1"))
    put(engine, backfill.id, backfill.to_document("1"))
    put(engine, alive.to_document()["ascend"]["doc_id"], alive.to_document())
    put(engine, silent.to_document()["ascend"]["doc_id"], silent.to_document(), two_days_ago_ms)
    engine.refresh(INDEX)
    alive_id = alive.to_document()["ascend"]["doc_id"]

    metrics = CorrelatorMetrics()
    first = correlator(engine, metrics)
    assert first.round().documents == 6

    kept = {long_running.id, recent.id, backfill.id}
    assert set(first.input.processes) == kept
    assert set(first.input.heartbeats) == {"host-a"}
    assert ids_in_index(engine) == {*kept, alive_id}
    sample = metrics.registry.get_sample_value
    assert sample("npuwatch_correlate_topology_forgotten_total", {"result": "deleted"}) == 2
    assert sample("npuwatch_correlate_topology_forgotten_total", {"result": "kept"}) == 0

    again = CorrelatorMetrics()
    restarted = correlator(engine, again)
    assert restarted.round().documents == 4
    assert set(restarted.input.processes) == kept
    assert ids_in_index(engine) == {*kept, alive_id}
    assert again.registry.get_sample_value(
        "npuwatch_correlate_topology_forgotten_total", {"result": "deleted"}
    ) in (None, 0)


def test_a_document_written_again_since_it_was_read_is_not_deleted(engine: SearchEngine) -> None:
    first = process("host-a", 7, 1_000_000)
    put(engine, first.id, first.to_document("1"))
    read = engine.get(INDEX, first.id)
    assert read is not None
    version = (int(read["_seq_no"]), int(read["_primary_term"]))
    spoke_again = process("host-a", 7, 2_000_000)
    put(engine, first.id, spoke_again.to_document("1"))  # the agent, between read and delete
    other = process("host-a", 8, 1_000_000)
    put(engine, other.id, other.to_document("1"))
    read_other = engine.get(INDEX, other.id)
    assert read_other is not None

    done = delete_forgotten(
        engine,
        INDEX,
        {
            first.id: version,
            other.id: (int(read_other["_seq_no"]), int(read_other["_primary_term"])),
            "never-there": (0, 1),
        },
    )

    assert (done.deleted, done.kept, done.failed) == (1, 2, 0)
    assert ids_in_index(engine) == {first.id}
    stored = engine.get(INDEX, first.id)
    assert stored is not None
    assert stored["_source"]["ascend"]["topology"]["facts"][0]["times"] == [2_000_000]
