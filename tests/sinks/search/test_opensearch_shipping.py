"""The search-engine sink against a real OpenSearch node: exact counts, idempotent replays,
dead letters, and an outage."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from npuwatch.parsers.hccl.model import CollectiveEvent, ProcessKey
from npuwatch.parsers.hccl.shipped import event_document, event_document_id
from npuwatch.sinks.follower import Backoff
from npuwatch.sinks.search.documents import Action, event_action, levels_below
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink
from npuwatch.sinks.search.streams import (
    INGESTED_PIPELINE,
    all_streams,
    events_template_name,
    policy_name,
    state_template_name,
    template_name,
)
from npuwatch.sinks.search.templates import (
    events_template,
    index_template,
    ingested_pipeline,
    state_template,
)
from tests.opensearch_node.launcher import RunningNode, start_node
from tests.sinks.search.conftest import (
    Journaled,
    install_template,
    journal_levels,
    make_shipper,
    ship_all,
)
from tests.sinks.search.es_adapter import ElasticsearchFace

STREAMS = ",".join(all_streams("default"))


def shipped(engine: SearchEngine, stream: str) -> int:
    return engine.count(stream)


@pytest.mark.integration
def test_the_template_maps_codes_as_keywords_message_as_text_and_keeps_the_original_unindexed(
    engine: SearchEngine,
) -> None:
    install_template(engine)
    template = engine.index_template(template_name("default"))
    assert template is not None
    properties = template["template"]["mappings"]["properties"]
    assert properties["error"]["properties"]["code"]["type"] == "keyword"
    assert properties["log"]["properties"]["level"]["type"] == "keyword"
    assert properties["message"]["type"] == "text"
    assert properties["event"]["properties"]["original"]["index"] is False
    assert template["index_patterns"] == ["logs-ascend.*-default"]


@pytest.mark.integration
def test_shipping_a_journal_gives_exactly_its_records_and_events(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path
) -> None:
    install_template(engine)
    shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
    ship_all(shipper)
    plog, device, profiling, _debug, events = (
        shipped(engine, stream) for stream in all_streams("default")
    )
    assert plog + device == hccl_journal.records
    assert profiling == 0  # a log tree has no profiling runs
    assert device > 0 and plog > 0
    assert events == hccl_journal.events > 0
    total = hccl_journal.records + hccl_journal.events
    ok = {"sink": "elasticsearch", "result": "ok"}
    assert metrics.value("npuwatch_shipped_total", ok) == total + hccl_journal.states
    # Each process's topology, and the agent's heartbeat, once: in their plain index.
    assert shipped(engine, "logs-ascend.topology-default") == hccl_journal.states > 0
    assert dead.lines() == []
    # The records are searchable by their fields: the HCCL fixture's EI0002 timeouts.
    coded = engine.count(STREAMS, {"term": {"error.code": "EI0002"}})
    assert coded > 0


@pytest.mark.integration
def test_a_min_level_leaves_the_records_below_it_in_the_journal_and_ships_the_rest(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path
) -> None:
    install_template(engine)
    levels = journal_levels(hccl_journal.directory)
    skipped = levels_below("WARNING")
    below = sum(count for level, count in levels.items() if level in skipped)
    assert below > 0 and below < hccl_journal.records  # the fixture has both kinds
    shipper, metrics, dead = make_shipper(
        engine, hccl_journal.directory, tmp_path, skipped_levels=skipped
    )
    ship_all(shipper)
    assert engine.count(STREAMS) == hccl_journal.records - below + hccl_journal.events
    query = {"terms": {"log.level": sorted(skipped)}}
    assert engine.count(STREAMS, query) == 0
    labels = {"sink": "elasticsearch", "result": "below_min_level"}
    assert metrics.value("npuwatch_shipped_total", labels) == below
    assert dead.lines() == []


@pytest.mark.integration
def test_replaying_the_journal_from_the_start_adds_nothing(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path
) -> None:
    install_template(engine)
    first, _, _ = make_shipper(engine, hccl_journal.directory, tmp_path / "first")
    ship_all(first)
    before = engine.count(STREAMS)
    # A new cursor store: the whole journal again, as after a lost cursor file.
    again, metrics, dead = make_shipper(engine, hccl_journal.directory, tmp_path / "again")
    ship_all(again)
    assert engine.count(STREAMS) == before == hccl_journal.records + hccl_journal.events
    labels = {"sink": "elasticsearch", "result": "duplicate"}
    assert metrics.value("npuwatch_shipped_total", labels) == before
    assert dead.lines() == []


@pytest.mark.integration
def test_a_mapping_conflict_goes_to_the_dead_letter_file_and_the_rest_is_indexed(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path
) -> None:
    install_template(engine)
    shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
    stream = "logs-ascend.plog-default"
    good = [
        Action(f"good-{n}", stream, {"@timestamp": "2025-09-14T09:30:00Z", "message": f"m{n}"})
        for n in range(5)
    ]
    bad = Action(
        "bad-0",
        stream,
        {"@timestamp": "2025-09-14T09:30:00Z", "message": "x", "log": {"offset": "not a number"}},
    )
    sink = shipper.sink
    assert isinstance(sink, SearchSink)
    sink.ship([*good[:2], bad, *good[2:]], Backoff(threading.Event(), 0.2, 1))
    assert engine.count(stream) == 5
    letters = dead.lines()
    assert [(letter["id"], letter["status"]) for letter in letters] == [("bad-0", 400)]
    assert "mapper_parsing_exception" in str(letters[0]["reason"])
    assert letters[0]["document"]["log"]["offset"] == "not a number"
    assert metrics.value("npuwatch_dead_letters_total", {"sink": "elasticsearch"}) == 1


@pytest.mark.integration
def test_an_engine_down_for_a_while_gets_everything_afterwards_and_nothing_twice(
    hccl_journal: Journaled, tmp_path: Path
) -> None:
    """The node is stopped while the sink ships; the sink retries with backoff (its cursor
    stays), and once the node is back on the same port everything arrives exactly once."""
    home = tmp_path / "node"
    node = start_node(home)
    port = int(node.url.rsplit(":", 1)[1])
    engine = connect(Connection("opensearch", (node.url,), timeout_s=5))
    try:
        install_template(engine)
        shipper, metrics, _ = make_shipper(engine, hccl_journal.directory, tmp_path / "state")
        shipper.pump()  # the first page arrives
        first_page = engine.count(STREAMS)
        assert 0 < first_page < hccl_journal.records + hccl_journal.events
        node.stop()
        restarted: list[RunningNode] = []

        def bring_back() -> None:
            threading.Event().wait(3)
            restarted.append(start_node(home, port=port))

        helper = threading.Thread(target=bring_back)
        helper.start()
        ship_all(shipper)  # retries until the node answers again
        helper.join()
        node = restarted[0]
        assert engine.count(STREAMS) == hccl_journal.records + hccl_journal.events
        assert metrics.value("npuwatch_ship_retries_total", {"sink": "elasticsearch"}) > 0
    finally:
        engine.close()
        node.stop()


@pytest.mark.integration
def test_the_elasticsearch_flavour_ships_the_same_documents_through_its_official_client(
    node: RunningNode, hccl_journal: Journaled, tmp_path: Path
) -> None:
    """The `elasticsearch` flavour (elasticsearch-py 8, its bulk helper) against the node,
    through es_adapter (which says what it covers): exact counts, and a replay adds nothing."""
    face = ElasticsearchFace(node.url)
    engine = connect(Connection("elasticsearch", (face.url,)))
    try:
        assert engine.info()["version"]["number"] == "2.19.6"  # the node, behind the face
        # The Elasticsearch template names its ILM policy (index.lifecycle.name), a setting
        # OpenSearch refuses: the template without it goes through the Elasticsearch client.
        template = index_template("esflavour", "elasticsearch", replicas=0)
        assert template["template"]["settings"].pop("index.lifecycle.name") == policy_name(
            "esflavour"
        )
        engine.put_index_template(template_name("esflavour"), template)
        events = events_template("esflavour", "elasticsearch", replicas=0)
        events["template"]["settings"].pop("index.lifecycle.name")
        engine.put_pipeline(INGESTED_PIPELINE, ingested_pipeline())
        engine.put_index_template(events_template_name("esflavour"), events)
        engine.put_index_template(
            state_template_name("esflavour"), state_template("esflavour", replicas=0)
        )
        first, _, dead = make_shipper(
            engine, hccl_journal.directory, tmp_path / "first", namespace="esflavour"
        )
        ship_all(first)
        streams = ",".join(all_streams("esflavour"))
        assert engine.count(streams) == hccl_journal.records + hccl_journal.events
        again, _, _ = make_shipper(
            engine, hccl_journal.directory, tmp_path / "again", namespace="esflavour"
        )
        ship_all(again)
        assert engine.count(streams) == hccl_journal.records + hccl_journal.events
        assert engine.count("logs-ascend.topology-esflavour") == hccl_journal.states
        assert dead.lines() == []
    finally:
        try:
            engine.client.indices.delete_data_stream(name="logs-ascend.*-esflavour")
            engine.client.options(ignore_status=404).indices.delete(
                index="logs-ascend.topology-esflavour"
            )
        finally:
            engine.close()
            face.close()


@pytest.mark.integration
def test_a_collective_event_whose_line_had_no_time_is_indexed_not_dead_lettered(
    engine: SearchEngine,
) -> None:
    """A collective event read from a line without a time (its document's `@timestamp` is
    null) was refused by the data stream and dead-lettered: the correlator never saw it."""
    install_template(engine)
    event = CollectiveEvent("notify", ProcessKey("host-a", 7), None, remote_rank=3)
    text = json.dumps(event_document(event))
    assert json.loads(text)["@timestamp"] is None
    action = event_action(event_document_id(event), text, "default")
    for ok, item in engine.bulk([action.bulk()], 10, 1 << 20):
        assert ok, item
    engine.refresh(action.stream)
    assert engine.count(action.stream, {"term": {"_id": action.id}}) == 1
