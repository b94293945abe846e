"""The correlator's incremental reads against a real node: every document once, a changed one
again, one the engine took in late within the overlap, and a look back that reads no sources
of what it has seen."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from npuwatch.cluster.reader import IngestReader
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import state_index
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import install_template

pytestmark = pytest.mark.integration

OVERLAP_S = 60.0


class Recording:
    """The engine, with the sources each search returned counted."""

    def __init__(self, engine: SearchEngine) -> None:
        self.engine = engine
        self.sources = 0
        self.bodies: list[dict[str, Any]] = []

    def search(self, index: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.bodies.append(dict(body))
        hits = self.engine.search(index, body)
        self.sources += sum("_source" in hit for hit in hits)
        return hits


@pytest.fixture
def engine(node: RunningNode) -> Iterator[SearchEngine]:
    made = connect(Connection("opensearch", (node.url,)))
    install_template(made, "reads")
    try:
        yield made
    finally:
        made.client.indices.delete(index=state_index("topology", "reads"), ignore=[404])
        made.close()


INDEX = state_index("topology", "reads")


def put(engine: SearchEngine, id_: str, value: int, late_ms: int | None = None) -> None:
    """A document through the ingest pipeline (stamped now), or with an ingest time `late_ms`
    in the past, as one the engine took in then but shows only now."""
    document: dict[str, Any] = {"ascend": {"doc_id": id_}, "value": value}
    if late_ms is None:
        engine.client.index(index=INDEX, id=id_, body=document)
    else:
        document["event"] = {"ingested": late_ms}
        engine.client.index(index=INDEX, id=id_, body=document, params={"pipeline": "_none"})
    engine.refresh(INDEX)


def values(hits: list[dict[str, Any]]) -> dict[str, int]:
    return {hit["_id"]: hit["_source"]["value"] for hit in hits}


def reader(engine: Any, page: int = 1000) -> IngestReader:
    return IngestReader(engine, INDEX, None, OVERLAP_S, 3600.0, page=page)


def test_each_document_is_read_once_and_again_when_it_changes(engine: SearchEngine) -> None:
    for n in range(7):
        put(engine, f"doc-{n}", n)
    reads = reader(engine, page=3)  # pages of 3: search_after in both kinds of read
    assert values(reads.read()) == {f"doc-{n}": n for n in range(7)}
    assert reads.read() == []
    time.sleep(0.01)  # a later ingest time for the changed document
    put(engine, "doc-2", 20)
    put(engine, "doc-7", 7)
    assert values(reads.read()) == {"doc-2": 20, "doc-7": 7}
    assert reads.read() == []


def test_a_document_taken_in_late_is_read_within_the_overlap_and_not_before_it(
    engine: SearchEngine,
) -> None:
    put(engine, "first", 1)
    reads = reader(engine)
    assert values(reads.read()) == {"first": 1}
    assert reads.newest_ms is not None
    put(engine, "late", 2, late_ms=reads.newest_ms - 10_000)
    put(engine, "too-late", 3, late_ms=reads.newest_ms - int(OVERLAP_S * 1000) - 10_000)
    assert values(reads.read()) == {"late": 2}
    assert reads.read() == []


def test_the_look_back_reads_no_source_of_what_was_read(engine: SearchEngine) -> None:
    for n in range(25):
        put(engine, f"beat-{n}", n)
    recording = Recording(engine)
    reads = reader(recording, page=10)
    assert len(reads.read()) == 25
    assert recording.sources == 25
    recording.sources, recording.bodies = 0, []
    assert reads.read() == []
    assert recording.sources == 0  # 25 documents in the overlap, none of them read again
    assert any(body.get("_source") is False for body in recording.bodies)
    put(engine, "beat-3", 30)
    assert values(reads.read()) == {"beat-3": 30}
    assert recording.sources == 1
