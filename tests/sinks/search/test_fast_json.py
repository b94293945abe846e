"""Both clients send their bodies through orjson, and the JSON is the same as their own
serializers write for every document npuwatch ships (the record documents of every fixture
tree, their events, a device reading and a profiling operator)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from elasticsearch.serializer import JsonSerializer
from opensearchpy.serializer import JSONSerializer

from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules
from npuwatch.sinks.search.engine import Connection
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.fast_json import elasticsearch_serializer, opensearch_serializer
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"


def shipped_documents() -> list[dict[str, Any]]:
    """The documents of every log file of the fixture trees, and the events the shipped rules
    raise on them."""
    clock = LocalClock(resolve_timezone("UTC"))
    engine = RuleEngine(load_rules(default_locations()))
    documents: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.rglob("*.log")):
        records = parse_bytes(path.read_bytes(), clock, path=str(path), host="node-1")
        if not records:
            continue
        documents.extend(record.to_document() for record in records)
        stream = engine.stream(records[0].source)
        engine.process(records, stream)
        stream.close()
    documents.extend(event.to_document() for event in engine.flush())
    return documents


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    found = shipped_documents()
    assert len(found) > 1000, "the fixture trees should give many documents"
    assert any("finding" in document["ascend"] for document in found), "and events"
    return found


def as_text(body: str | bytes) -> str:
    return body.decode("utf-8") if isinstance(body, bytes) else body


def test_opensearch_bodies_are_the_json_the_client_would_write(
    documents: list[dict[str, Any]],
) -> None:
    ours, theirs = opensearch_serializer(), JSONSerializer()
    assert ours is not None
    for document in documents:
        written = ours.dumps(document)
        assert isinstance(written, str)  # the bulk helper measures str
        assert json.loads(written) == json.loads(theirs.dumps(document))
    assert ours.dumps('{"already":"serialised"}') == '{"already":"serialised"}'


def test_elasticsearch_bodies_are_the_json_the_client_would_write(
    documents: list[dict[str, Any]],
) -> None:
    ours, theirs = elasticsearch_serializer(), JsonSerializer()
    assert ours is not None
    for document in documents:
        assert json.loads(as_text(ours.dumps(document))) == json.loads(theirs.dumps(document))


def test_text_outside_ascii_is_written_as_utf_8_not_escaped() -> None:
    serializer = opensearch_serializer()
    assert serializer is not None
    assert serializer.dumps({"message": "设备 3 超时"}) == '{"message":"设备 3 超时"}'


@pytest.mark.parametrize("flavour", ["opensearch", "elasticsearch"])
def test_each_engine_connects_with_the_orjson_serializer(flavour: Any) -> None:
    engine = connect(Connection(flavour, ("http://127.0.0.1:9",)))  # no request is made
    transport = engine.client.transport
    serializer = (
        transport.serializer
        if flavour == "opensearch"
        else transport.serializers.get_serializer("application/json")
    )
    assert type(serializer).__name__ == "OrjsonSerializer"
    assert json.loads(as_text(serializer.dumps({"a": [1, 2.5, None]}))) == {"a": [1, 2.5, None]}
