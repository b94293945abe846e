"""The Kibana saved objects of deploy/kibana: well formed, naming only fields the index template
maps (for the incidents, the fields an incident document written with the real template maps),
and their Lucene queries finding exactly what they should on the real OpenSearch node.

Kibana itself is not run here: what is tested is the file, the fields and the very query strings
the saved searches hold, run as `query_string` queries on their data views' index patterns.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from npuwatch.cluster.incident_document import incident_id
from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.parsers.npu_smi import parse_npu_smi
from npuwatch.parsers.telemetry import DEVICE_KIND
from npuwatch.sinks.search.engine import SearchEngine
from npuwatch.sinks.search.streams import (
    STATE_INDICES,
    all_streams,
    state_index,
)
from npuwatch.sinks.search.templates import (
    index_template,
)
from npuwatch.vocabulary import ERROR_LEVELS
from tests.agent.telemetry_agent import SAMPLE, journal_telemetry
from tests.npu_smi_samples import load_doc_samples
from tests.sinks.search.conftest import (
    Journaled,
    install_template,
    journal_levels,
    make_shipper,
    ship_all,
)

pytestmark = pytest.mark.integration

NDJSON = Path(__file__).resolve().parents[3] / "deploy" / "kibana" / "npuwatch.ndjson"
INDEX_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"

ALL_VIEW = "npuwatch-logs-ascend"
EVENTS_VIEW = "npuwatch-logs-ascend-events"
DEVICE_VIEW = "npuwatch-logs-ascend-device"
INCIDENTS_VIEW = "npuwatch-logs-ascend-incidents"
ERRORS = "npuwatch-ascend-errors"
RULE_EVENTS = "npuwatch-ascend-rule-events"
HCCL_AND_TIMEOUTS = "npuwatch-hccl-and-timeouts"
HEALTH = "npuwatch-npu-health-not-ok"
OPEN_INCIDENTS = "npuwatch-open-incidents"
DASHBOARD = "npuwatch-ascend-overview"
INCIDENTS_DASHBOARD = "npuwatch-ascend-incidents"
DEBUG_VIEW = "npuwatch-logs-ascend-debug"
DEBUG_FINDINGS = "npuwatch-debug-findings"
DASHBOARDS = {
    DASHBOARD: {RULE_EVENTS, HCCL_AND_TIMEOUTS, ERRORS, HEALTH, DEBUG_FINDINGS},
    INCIDENTS_DASHBOARD: {OPEN_INCIDENTS},
}
"""The saved searches each dashboard shows."""
INCIDENT_NAMESPACE = "kibanaincidents"

# `field:` in a Lucene query string (not inside quotes; Kibana's and OpenSearch's syntax alike).
_QUERY_FIELD = re.compile(r"(?<![\w.@])([@\w][\w.@]*):")
_LUCENE_WORDS = frozenset({"_exists_"})


def saved_objects() -> list[dict[str, Any]]:
    lines = NDJSON.read_text(encoding="utf-8").splitlines()
    assert lines and all(line.strip() for line in lines), "one object per line, no blank lines"
    objects = [json.loads(line) for line in lines]
    assert all(isinstance(obj, dict) for obj in objects)
    return objects


def by_id() -> dict[str, dict[str, Any]]:
    return {obj["id"]: obj for obj in saved_objects()}


def search_source(obj: dict[str, Any]) -> dict[str, Any]:
    text = obj["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"]
    assert isinstance(text, str)  # Kibana keeps it as a JSON string
    source: dict[str, Any] = json.loads(text)
    return source


def query_of(obj: dict[str, Any]) -> str:
    query = search_source(obj)["query"]
    assert query["language"] == "lucene"
    text: str = query["query"]
    return text


def view_of(search: dict[str, Any], objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The data view a saved search reads, followed through its reference."""
    name = search_source(search)["indexRefName"]
    (reference,) = [ref for ref in search["references"] if ref["name"] == name]
    assert reference["type"] == "index-pattern"
    return objects[reference["id"]]


def pattern_of(search_id: str) -> str:
    objects = by_id()
    title: str = view_of(objects[search_id], objects)["attributes"]["title"]
    return title


def query_fields(query: str) -> set[str]:
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', query)
    return {name for name in _QUERY_FIELD.findall(unquoted) if name not in _LUCENE_WORDS}


def mapped_fields(properties: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every leaf of a mapping, by dotted path."""
    fields: dict[str, dict[str, Any]] = {}
    for name, mapping in properties.items():
        path = f"{prefix}{name}"
        if "properties" in mapping:
            fields.update(mapped_fields(mapping["properties"], f"{path}."))
        else:
            fields[path] = mapping
    return fields


def template_fields() -> dict[str, dict[str, Any]]:
    template = index_template("default", "opensearch", replicas=0)
    return mapped_fields(template["template"]["mappings"]["properties"])


def in_view(engine: SearchEngine, search_id: str, query: dict[str, Any] | None = None) -> int:
    """Documents of the search's data view matching `query`, in this test's namespace only
    (the data views span every namespace; other tests of the session ship into theirs)."""
    namespace = {"term": {"data_stream.namespace": "default"}}
    scoped = {"bool": {"filter": [namespace], "must": [query] if query is not None else []}}
    return engine.count(pattern_of(search_id), scoped)


def run_search(engine: SearchEngine, search_id: str) -> int:
    """The hit count of a saved search: its query string on its data view's pattern, as
    Kibana's Discover sends it (less the time range)."""
    search = by_id()[search_id]
    return in_view(
        engine,
        search_id,
        {"query_string": {"query": query_of(search), "analyze_wildcard": True}},
    )


# --- the file --------------------------------------------------------------------------------


def test_the_file_is_one_saved_object_per_line_with_unique_ids_and_resolvable_references() -> None:
    objects = saved_objects()
    ids = [obj["id"] for obj in objects]
    assert len(ids) == len(set(ids))
    types = Counter(obj["type"] for obj in objects)
    assert types == {"index-pattern": 5, "search": 6, "dashboard": 2}
    known = {(obj["type"], obj["id"]) for obj in objects}
    for obj in objects:
        assert set(obj) >= {"id", "type", "attributes", "references"}, obj["id"]
        assert obj["id"].startswith("npuwatch-")
        assert obj["attributes"]["title"]
        names = [ref["name"] for ref in obj["references"]]
        assert len(names) == len(set(names)), obj["id"]
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in known, (obj["id"], ref)
        # Kibana 8 migrates what it is given up from these versions: none may be newer.
        assert obj["coreMigrationVersion"] == "8.0.0"
        assert obj["migrationVersion"] == {obj["type"]: "8.0.0"}


def test_each_saved_search_reads_its_data_view_through_a_reference() -> None:
    objects = by_id()
    expected = {
        ERRORS: ALL_VIEW,
        RULE_EVENTS: EVENTS_VIEW,
        HCCL_AND_TIMEOUTS: EVENTS_VIEW,
        HEALTH: DEVICE_VIEW,
        OPEN_INCIDENTS: INCIDENTS_VIEW,
        DEBUG_FINDINGS: DEBUG_VIEW,
    }
    searches = {id_: obj for id_, obj in objects.items() if obj["type"] == "search"}
    assert set(searches) == set(expected)
    for id_, search in searches.items():
        source = search_source(search)
        assert "index" not in source  # the id is in the references, never inline
        assert source["indexRefName"] == INDEX_REF
        assert [ref["name"] for ref in search["references"]] == [INDEX_REF]
        assert view_of(search, objects)["id"] == expected[id_]
        assert source["filter"] == []
        assert search["attributes"]["columns"]
    titles = {id_: obj["attributes"]["title"] for id_, obj in searches.items()}
    assert titles == {
        ERRORS: "Ascend errors",
        RULE_EVENTS: "Ascend rule events",
        HCCL_AND_TIMEOUTS: "HCCL and timeouts",
        HEALTH: "NPU health not OK",
        OPEN_INCIDENTS: "Open collective incidents",
        DEBUG_FINDINGS: "Debugging tools' findings",
    }


@pytest.mark.parametrize("dashboard_id", sorted(DASHBOARDS))
def test_the_dashboard_panels_are_the_saved_searches_by_reference(dashboard_id: str) -> None:
    objects = by_id()
    dashboard = objects[dashboard_id]
    panels = json.loads(dashboard["attributes"]["panelsJSON"])
    references = {ref["name"]: ref for ref in dashboard["references"]}
    assert len(references) == len(panels)
    shown = set()
    for panel in panels:
        assert "id" not in panel  # by reference, as Kibana exports them
        assert panel["gridData"]["i"] == panel["panelIndex"]
        reference = references[f"{panel['panelIndex']}:{panel['panelRefName']}"]
        assert reference["type"] == panel["type"] == "search"
        shown.add(reference["id"])
    assert shown == DASHBOARDS[dashboard_id]
    grid = [(p["gridData"]["x"], p["gridData"]["y"]) for p in panels]
    assert len(grid) == len(set(grid))  # no two panels on top of each other
    assert search_source(dashboard)["query"]["language"] == "lucene"


def test_every_saved_search_is_on_a_dashboard() -> None:
    objects = by_id()
    assert set(DASHBOARDS) == {id_ for id_, obj in objects.items() if obj["type"] == "dashboard"}
    searches = {id_ for id_, obj in objects.items() if obj["type"] == "search"}
    assert set().union(*DASHBOARDS.values()) == searches


def test_the_data_views_cover_the_streams_of_any_namespace() -> None:
    objects = by_id()
    title = {
        id_: objects[id_]["attributes"]["title"] for id_ in (ALL_VIEW, EVENTS_VIEW, DEVICE_VIEW)
    }
    for namespace in ("default", "prod", "site_2"):
        plog, device, profiling, debug, events = all_streams(namespace)
        streams = [plog, device, profiling, debug, events]
        assert all(fnmatchcase(stream, title[ALL_VIEW]) for stream in streams)
        assert [s for s in streams if fnmatchcase(s, title[EVENTS_VIEW])] == [events]
        assert [s for s in streams if fnmatchcase(s, title[DEVICE_VIEW])] == [device]
    for id_ in title:
        assert objects[id_]["attributes"]["timeFieldName"] == "@timestamp"


def test_the_incidents_data_view_covers_the_incidents_of_any_namespace_and_nothing_else() -> None:
    view = by_id()[INCIDENTS_VIEW]["attributes"]
    assert view["timeFieldName"] == "@timestamp"
    for namespace in ("default", "prod", "site_2"):
        assert fnmatchcase(state_index("incidents", namespace), view["title"])
        others = [state_index("topology", namespace), *all_streams(namespace)]
        assert not any(fnmatchcase(index, view["title"]) for index in others)


# --- the fields ------------------------------------------------------------------------------


def test_every_field_the_objects_name_is_mapped_by_the_index_template() -> None:
    fields = template_fields()
    assert fields["@timestamp"]["type"] == "date"
    named: list[tuple[str, str]] = []
    for obj in saved_objects():
        if obj["id"] in incident_objects():
            continue  # the state template maps them as they come: tested on the node below
        attributes = obj["attributes"]
        if obj["type"] == "index-pattern":
            named.append((obj["id"], attributes["timeFieldName"]))
            named += [(obj["id"], name) for name in json.loads(attributes["fieldFormatMap"])]
        if obj["type"] == "search":
            named += [(obj["id"], column) for column in attributes["columns"]]
            named += [(obj["id"], field) for field, _ in attributes["sort"]]
            query = query_of(obj)
            in_query = query_fields(query)
            assert in_query, (obj["id"], query)
            for field in in_query:
                named.append((obj["id"], field))
                # Searchable: neither the unindexed original nor analysed text with a term.
                assert fields.get(field, {}).get("index", True), (obj["id"], field)
                assert fields.get(field, {}).get("type") != "text", (obj["id"], field)
    missing = [(id_, field) for id_, field in named if field not in fields]
    assert missing == []
    assert len(named) > 20


def incident_objects() -> set[str]:
    """The incidents data view and the saved searches that read it."""
    objects = by_id()
    return {INCIDENTS_VIEW} | {
        id_
        for id_, obj in objects.items()
        if obj["type"] == "search" and view_of(obj, objects)["id"] == INCIDENTS_VIEW
    }


def named_fields(obj: dict[str, Any]) -> list[str]:
    """The fields a data view or a saved search names: time field, formats, columns, sort and
    query."""
    attributes = obj["attributes"]
    if obj["type"] == "index-pattern":
        return [attributes["timeFieldName"], *json.loads(attributes["fieldFormatMap"])]
    return [
        *attributes["columns"],
        *(field for field, _ in attributes["sort"]),
        *sorted(query_fields(query_of(obj))),
    ]


def test_the_field_walk_and_query_parsing_see_what_they_should() -> None:
    # Guards for the test above: a made-up field is not mapped, a query's fields are found.
    fields = template_fields()
    assert "ascend.npu.health" in fields and "rule.category" in fields
    assert "ascend.npu" not in fields and "rule.severity" not in fields
    assert query_fields('a.b:(X OR Y) AND NOT c:"d:e" OR _exists_:f') == {"a.b", "c"}


def test_the_errors_query_names_every_error_level() -> None:
    query = query_of(by_id()[ERRORS])
    assert set(re.findall(r"log\.level:\(([^)]*)\)", query)[0].split(" OR ")) == ERROR_LEVELS


# --- the queries on the real node ------------------------------------------------------------


@pytest.fixture
def setup_default(engine: SearchEngine) -> Iterator[None]:
    """Everything `es setup` installs for the namespace `default`: the agent's journal holds
    its process documents and heartbeats too, which go to the plain topology index (a
    data-stream template alone refuses them). The plain indices go afterwards, as the `engine`
    fixture's data streams do."""
    install_template(engine, "default")
    yield
    engine.client.indices.delete(index=plain_indices("default"), ignore=[404])


def plain_indices(namespace: str) -> str:
    return ",".join(state_index(name, namespace) for name in STATE_INDICES)


def journal_events(directory: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with JournalReader(directory) as reader:
        position = Position()
        while rows := reader.events_after(position, 256):
            events += [json.loads(document) for _, document in rows]
            position = rows[-1][0]
    return events


def is_hccl_or_timeout(event: dict[str, Any]) -> bool:
    category = event["rule"]["category"]
    return category in {"timeout", "communication"} or event["log"].get("logger") == "HCCL"


def test_the_saved_searches_find_exactly_their_documents_of_the_hccl_journal(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path, setup_default: None
) -> None:
    shipper, _, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
    ship_all(shipper)
    engine.client.indices.refresh(index="logs-ascend.*")
    assert dead.lines() == []
    assert in_view(engine, ERRORS) == hccl_journal.records + hccl_journal.events

    levels = journal_levels(hccl_journal.directory)
    errors = sum(count for level, count in levels.items() if level in ERROR_LEVELS)
    assert 0 < errors < hccl_journal.records
    assert run_search(engine, ERRORS) == errors

    events = journal_events(hccl_journal.directory)
    assert len(events) == hccl_journal.events
    # Beside the rule events (alerts), the collective failures the correlator reads.
    rule_events = [event for event in events if event["event"]["kind"] == "alert"]
    assert 0 < len(rule_events) < len(events)
    assert run_search(engine, RULE_EVENTS) == len(rule_events)
    wanted = sum(map(is_hccl_or_timeout, rule_events))
    assert 0 < wanted < len(rule_events)  # the fixture has both kinds
    assert run_search(engine, HCCL_AND_TIMEOUTS) == wanted

    # A log tree has no npu-smi readings: device logs are there, unhealthy chips are not.
    assert in_view(engine, HEALTH) > 0
    assert run_search(engine, HEALTH) == 0


def test_npu_health_not_ok_finds_every_reading_of_the_warned_chip(
    engine: SearchEngine, tmp_path: Path, setup_default: None
) -> None:
    journaled = journal_telemetry(tmp_path / "agent")
    shipper, _, dead = make_shipper(engine, journaled.directory, tmp_path / "ship")
    ship_all(shipper)
    engine.client.indices.refresh(index="logs-ascend.*")
    assert dead.lines() == []
    chips = parse_npu_smi(load_doc_samples()[SAMPLE]).chips
    warned = sum(chip.health != "OK" for chip in chips)
    assert 0 < warned < len(chips)
    readings = journaled.entries[DEVICE_KIND]
    polls = readings // len(chips)
    assert polls * len(chips) == readings > 0
    assert run_search(engine, HEALTH) == polls * warned
    assert run_search(engine, ERRORS) == 0  # readings are INFO or WARNING, never errors


# --- the incidents, as the correlator writes them --------------------------------------------


def mapping_of(engine: SearchEngine, index: str) -> dict[str, dict[str, Any]]:
    """Every leaf the engine has mapped in `index`, and the objects it keeps unindexed."""
    (found,) = engine.client.indices.get_mapping(index=index).values()
    return mapped_fields(found["mappings"]["properties"])


def open_incident_ids(engine: SearchEngine, search_id: str, index: str) -> set[str]:
    """The ids the saved search finds among the documents of `index` (its data view spans
    every namespace), by its query string as Discover sends it."""
    query = {"query_string": {"query": query_of(by_id()[search_id]), "analyze_wildcard": True}}
    scoped = {"bool": {"filter": [{"term": {"_index": index}}], "must": [query]}}
    hits = engine.search(pattern_of(search_id), {"query": scoped, "size": 100})
    return {str(hit["_id"]) for hit in hits}


def test_open_incidents_finds_exactly_the_open_incidents_the_correlator_wrote(
    engine: SearchEngine, hccl_journal: Journaled, tmp_path: Path
) -> None:
    """The HCCL journal shipped with every template of `es setup`, one round of the real
    correlator writing its incidents, and beside them the same incident closed and another
    still provisional: the saved search finds the open ones, provisional or not, and no
    closed one."""
    namespace = INCIDENT_NAMESPACE
    incidents = state_index("incidents", namespace)
    install_template(engine, namespace)
    try:
        shipper, _, dead = make_shipper(engine, hccl_journal.directory, tmp_path, namespace)
        ship_all(shipper)
        assert dead.lines() == []
        engine.client.indices.refresh(index="logs-ascend.*")
        service = CorrelatorService(
            engine, CorrelateSettings(namespace=namespace), CorrelatorMetrics()
        )
        service.round()
        written = {id_: tracked.incident for id_, tracked in service.book.tracked.items()}
        assert written, "the correlator wrote no incident for the HCCL journal"
        assert not any(incident["closed"] for incident in written.values())

        first_id, first = next(iter(written.items()))
        stored = engine.get(incidents, first_id)
        assert stored is not None
        closed = json.loads(json.dumps(stored["_source"]))
        closed["ascend"]["incident"].update({"closed": True, "close_reason": "quiet"})
        closed_id = incident_id("closed-copy", 1)
        engine.put_document(incidents, closed_id, closed, None)
        provisional = json.loads(json.dumps(stored["_source"]))
        provisional["ascend"]["incident"]["provisional"] = True
        provisional_id = incident_id("provisional-copy", 1)
        engine.put_document(incidents, provisional_id, provisional, None)
        engine.refresh(incidents)

        assert engine.count(incidents) == len(written) + 2
        expected = {*written, provisional_id}
        assert open_incident_ids(engine, OPEN_INCIDENTS, incidents) == expected
        assert first["victims_count"] > 0 and first["root_cause"]

        # Every field the incident objects name is mapped, and what the query asks searchable.
        fields = mapping_of(engine, incidents)
        for obj_id in sorted(incident_objects()):
            obj = by_id()[obj_id]
            missing = [name for name in named_fields(obj) if name not in fields]
            assert missing == [], (obj_id, missing, sorted(fields))
            if obj["type"] == "search":
                for name in query_fields(query_of(obj)):
                    assert fields[name].get("index", True), (obj_id, name)
                    assert fields[name].get("type") != "text", (obj_id, name)
        assert fields["ascend.incident.closed"]["type"] == "boolean"
        assert fields["ascend.incident.victims"] == {"type": "object", "enabled": False}
    finally:
        engine.client.indices.delete(index=plain_indices(namespace), ignore=[404])
