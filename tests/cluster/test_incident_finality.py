"""Honest finality, and one incident per fault, against a real node: the bundled collection
(logs of December 2025, a backfill) journaled by real agents, its documents shipped to the engine
in the order a live cluster may deliver them (the collective events first, the process facts
after), and correlated round by round.

Before, every revision of such an incident was final from the first, wrong one (the settle time
was counted in the logs' time, a year past), and an early verdict written under another id was
never merged. The verdict is provisional until the settle time has passed since the correlator
first gave it, and while it names a place whose process facts are not in; the final one is the
same document, revised, with what changed; an early verdict of the same fault is closed as
merged into it; `correlate --once` beside the service writes nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.sinks.search.documents import Action, event_action, state_action
from npuwatch.sinks.search.engine import SearchEngine
from npuwatch.sinks.search.streams import events_stream, state_index
from tests.cluster.fixture_hosts import journal_hosts
from tests.npuwatch_command import run_npuwatch
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import namespace_on

pytestmark = pytest.mark.integration

NAMESPACE = "finality"


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return journal_hosts(tmp_path_factory.mktemp("finality"))


@pytest.fixture
def engine(node: RunningNode) -> Iterator[SearchEngine]:
    with namespace_on(node, NAMESPACE) as made:
        yield made


def collective_events(state: Path) -> list[Action]:
    actions = []
    with JournalReader(state / "journal") as reader:
        position = Position()
        while rows := reader.event_rows_after(position, 512):
            actions += [
                event_action(id_, document, NAMESPACE)
                for _, id_, document in rows
                if '"collective"' in document
            ]
            position = rows[-1][0]
    return actions


def topology(state: Path) -> list[Action]:
    with JournalReader(state / "journal") as reader:
        return [state_action(row, NAMESPACE) for row in reader.latest_states().values()]


def ship(engine: SearchEngine, actions: list[Action]) -> None:
    for ok, item in engine.bulk((action.bulk() for action in actions), 500, 8 << 20):
        assert ok, item
    engine.refresh(events_stream(NAMESPACE))
    engine.refresh(state_index("topology", NAMESPACE))


def incidents(engine: SearchEngine) -> list[dict[str, Any]]:
    index = state_index("incidents", NAMESPACE)
    engine.refresh(index)
    hits = engine.search(index, {"size": 100, "sort": [{"ascend.doc_id": {"order": "asc"}}]})
    return [hit["_source"]["ascend"]["incident"] for hit in hits]


def test_facts_after_the_events_of_a_backfill_keep_the_verdict_provisional_then_revise_it(
    journals: dict[str, Path], engine: SearchEngine, tmp_path: Path
) -> None:
    ship(engine, [action for state in journals.values() for action in collective_events(state)])
    service = CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), CorrelatorMetrics())
    service.round()
    (early,) = incidents(engine)
    # Without the process facts, the rank the others waited for is a place "without logs".
    assert early["provisional"] is True
    assert [p["has_logs"] for p in early["waiting_chain"]] == [False]

    ship(engine, [action for state in journals.values() for action in topology(state)])
    service.round()
    (final,) = incidents(engine)
    assert final["id"] == early["id"]
    assert final["provisional"] is False  # every rank reported, every place's facts are in
    assert final["kind"] == "first_error_not_timeout"
    assert [(p["host"], p["rank"], p["device"]) for p in final["root_cause"]] == [("host-b", 5, 1)]
    first, revised = final["revisions"]
    assert (first["provisional"], first["changed"]) == (True, ["verdict"])
    assert revised["provisional"] is False
    assert {"root_cause", "waiting_chain", "provisional"} <= set(revised["changed"])
    assert revised["was"] == early["summary"] != final["summary"]

    # `correlate --once` beside the service: the same incident, not a second one.
    config = tmp_path / "correlator.toml"
    config.write_text(
        f'[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\n'
        f'hosts = ["{engine.connection.hosts[0]}"]\nnamespace = "{NAMESPACE}"\n',
        "utf-8",
    )
    once = run_npuwatch("correlate", "--once", "--config", str(config), "--json")
    assert once.returncode == 1, once.stderr
    assert [found["id"] for found in json.loads(once.stdout)["incidents"]] == [final["id"]]
    assert [found["id"] for found in incidents(engine)] == [final["id"]]


def test_an_early_verdict_under_another_id_is_closed_as_merged_into_the_incident(
    journals: dict[str, Path], engine: SearchEngine
) -> None:
    actions = [a for state in journals.values() for a in collective_events(state) + topology(state)]
    ship(engine, actions)
    CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), CorrelatorMetrics()).round()
    (found,) = incidents(engine)
    # What another correlator wrote of the same fault before the facts were in: its root
    # cause a rank without logs, its first failure elsewhere, so another id.
    early = {
        **found,
        "id": "early-verdict",
        "provisional": True,
        "root_cause": [{**found["root_cause"][0], "host": None, "pid": None, "has_logs": False}],
        "revisions": [],
    }
    index = state_index("incidents", NAMESPACE)
    stored = engine.get(index, found["id"])
    assert stored is not None
    document = stored["_source"]
    document["ascend"] = {"doc_id": "early-verdict", "incident": early}
    engine.put_document(index, "early-verdict", document, None)

    CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), CorrelatorMetrics()).round()
    by_id = {incident["id"]: incident for incident in incidents(engine)}
    assert set(by_id) == {found["id"], "early-verdict"}
    assert by_id["early-verdict"]["closed"] is True
    assert by_id["early-verdict"]["close_reason"] == f"merged into {found['id']}"
    assert by_id[found["id"]]["closed"] is False
    # A later round revises the incident, never the merged one again.
    CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), CorrelatorMetrics()).round()
    assert [i["id"] for i in incidents(engine) if not i["closed"]] == [found["id"]]


def test_a_victims_facts_that_come_in_later_are_written_into_the_incident_without_a_revision(
    journals: dict[str, Path], engine: SearchEngine
) -> None:
    """Before, a document was written again only when its verdict changed: ranks that were
    only waiting, whose process facts came in after the verdict, stayed listed without their
    rank and device for good, though the correlator knew them."""
    ship(engine, [action for state in journals.values() for action in collective_events(state)])
    ship(engine, [action for host in ("host-b",) for action in topology(journals[host])])
    service = CorrelatorService(engine, CorrelateSettings(namespace=NAMESPACE), CorrelatorMetrics())
    service.round()
    (before,) = incidents(engine)
    on_host_a = [p for p in before["victims"] if p["host"] == "host-a"]
    assert len(on_host_a) == 4
    assert {(p["rank"], p["device"]) for p in on_host_a} == {(None, None)}

    ship(engine, topology(journals["host-a"]))  # host-a's agent ships its facts late
    service.round()
    (after,) = incidents(engine)
    assert after["id"] == before["id"]
    assert after["summary"] == before["summary"]
    ranks = {p["rank"] for p in after["victims"] if p["host"] == "host-a"}
    assert ranks == {0, 1, 2, 3}
    assert after["revisions"] == before["revisions"]  # the verdict is the same: no revision
    service.round()  # and a round with nothing new writes nothing
    assert incidents(engine) == [after]
