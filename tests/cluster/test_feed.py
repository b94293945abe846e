"""The agents' documents as the engine's input: only what is new, each thing once, and the
engine made again from what was kept gives the same verdicts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from npuwatch.cluster.feed import CorrelationInput
from npuwatch.correlation.correlator import Correlator
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact, ProcessKey
from npuwatch.parsers.hccl.shipped import (
    Heartbeat,
    ProcessFacts,
    event_document,
    event_document_id,
    heartbeat_document_id,
)
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from tests.conftest import TREES

TREE = TREES / "hccl-timeout"


def extracted() -> list[Extracted]:
    """What scan's extractor gives for the whole two-host tree."""
    items: list[Extracted] = []
    for path in sorted(TREE.rglob("*.log")):
        host = path.relative_to(TREE).parts[0]
        records = parse_bytes(path.read_bytes(), LocalClock(timezone.utc), str(path), host)
        extractor = CollectiveExtractor()
        items += extractor.feed(records) + extractor.finish()
    return items


def shipped(items: list[Extracted]) -> list[dict[str, Any]]:
    """The hits an agent's documents of these items would be (as the search engine gives)."""
    books: dict[str, ProcessFacts] = {}
    hits: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Fact):
            if item.name == "heard":
                continue
            facts = ProcessFacts(item.process.host, item.process.pid, item.communicator)
            books.setdefault(facts.id, facts).add(item)
        else:
            source = json.loads(json.dumps(event_document(item)))
            hits.append({"_id": event_document_id(item), "_source": source})
    for id_, facts in books.items():
        hits.append({"_id": id_, "_source": json.loads(json.dumps(facts.to_document("1")))})
    return hits


def test_the_documents_give_the_engine_the_verdict_scan_gives() -> None:
    items = extracted()
    offline = Correlator()
    offline.add_all(items)
    live = Correlator()
    fed = CorrelationInput()
    for hit in shipped(items):
        live.add_all(fed.take(hit))
    assert [i.to_dict() for i in live.incidents()] == [i.to_dict() for i in offline.incidents()]
    assert fed.problems == []


def test_a_document_read_again_gives_nothing_and_a_rewritten_one_only_its_new_facts() -> None:
    key = ProcessKey("host-a", 7)
    facts = ProcessFacts("host-a", 7, None)
    facts.add(Fact(key, "device_ip", "10.0.0.1", 100))
    fed = CorrelationInput()
    hit = {"_id": facts.id, "_source": facts.to_document("1")}
    assert fed.take(hit) == [Fact(key, "device_ip", "10.0.0.1", 100)]
    assert fed.take(hit) == []
    facts.add(Fact(key, "exec_timeout_s", 1836, 200))
    facts.add(Fact(key, "device_ip", "10.0.0.1", 300))
    again = fed.take({"_id": facts.id, "_source": facts.to_document("1")})
    assert sorted(again) == sorted(
        [Fact(key, "exec_timeout_s", 1836, 200), Fact(key, "device_ip", "10.0.0.1", 300)]
    )


def test_an_event_is_fed_once_however_often_it_is_read() -> None:
    event = CollectiveEvent("notify", ProcessKey("host-a", 7), 1_000, remote_rank=3)
    hit = {"_id": event_document_id(event), "_source": event_document(event)}
    fed = CorrelationInput()
    assert fed.take(hit) == [event]
    assert fed.take(hit) == []


def test_a_heartbeat_says_each_process_s_newest_line_once_and_who_is_alive() -> None:
    fed = CorrelationInput()
    beat = Heartbeat("host-a", 10_000_000, 30.0, {7: 9_000_000, 8: 8_000_000})
    assert sorted(fed.take({"_id": "h", "_source": beat.to_document()})) == sorted(beat.heard())
    later = Heartbeat("host-a", 40_000_000, 30.0, {7: 39_000_000, 8: 8_000_000})
    assert fed.take({"_id": "h", "_source": later.to_document()}) == [
        Fact(ProcessKey("host-a", 7), "heard", 39_000_000, 39_000_000)
    ]
    assert fed.take({"_id": "h", "_source": beat.to_document()}) == []  # an older one
    assert fed.alive("host-a", 40_000_000 + 89_000_000) is True
    assert fed.alive("host-a", 40_000_000 + 91_000_000) is False
    assert fed.alive("host-b", 40_000_000) is None


def test_a_document_that_is_not_an_agent_s_is_a_problem_not_an_exception() -> None:
    fed = CorrelationInput()
    broken = {"event": {"dataset": "ascend.topology"}, "host": {"name": "h"}}
    assert fed.take({"_id": "x", "_index": "i", "_source": broken}) == []
    assert fed.take({"_id": "y", "_index": "i", "_source": {"message": "hello"}}) == []
    assert fed.unreadable == 2
    assert fed.problems[0].startswith("document x of i: KeyError")


def test_the_engine_made_again_from_what_was_kept_decides_the_same() -> None:
    fed = CorrelationInput()
    live = Correlator()
    for hit in shipped(extracted()):
        live.add_all(fed.take(hit))
    again = Correlator()
    again.add_all(fed.everything())
    assert [i.to_dict() for i in again.incidents()] == [i.to_dict() for i in live.incidents()]


def test_what_is_older_than_the_lookback_and_not_alive_is_forgotten() -> None:
    fed = CorrelationInput()
    for hit in shipped(extracted()):
        fed.take(hit)
    kept = len(fed.processes) + len(fed.events)
    assert len(fed.forget_before(0)) == 0
    forgotten = fed.forget_before(2**62)
    assert len(forgotten) == kept
    assert len(forgotten.documents) == len(shipped([i for i in extracted() if isinstance(i, Fact)]))
    assert not fed.processes and not fed.events


def ingested(document: dict[str, Any], at_us: int) -> dict[str, Any]:
    """`document` as the engine's ingest pipeline stores it, taken at `at_us`."""
    stamp = datetime.fromtimestamp(at_us / 1e6, timezone.utc).isoformat().replace("+00:00", "Z")
    return {**document, "event": {**document["event"], "ingested": stamp}}


def test_a_process_a_recent_heartbeat_lists_is_kept_and_a_silent_agent_is_forgotten() -> None:
    """By when the engine took each document, not by the times its logs say."""
    fed = CorrelationInput()
    old_us, now_us = 1_000_000_000_000, 200_000_000_000_000
    for pid in (1, 2):
        facts = ProcessFacts("host-a", pid, None)
        facts.add(Fact(ProcessKey("host-a", pid), "logic_device", pid, now_us))
        document = ingested(facts.to_document("1"), old_us)
        fed.take({"_id": facts.id, "_seq_no": pid, "_primary_term": 1, "_source": document})
    # host-a's clock is a day behind: its heartbeat says so, and is as recent as it was taken.
    alive = Heartbeat("host-a", now_us - 86_400_000_000, 30.0, {2: now_us})
    silent = Heartbeat("host-b", now_us, 30.0, {})
    for seq_no, (beat, at_us) in enumerate(((alive, now_us), (silent, old_us)), start=10):
        hit = {"_id": heartbeat_document_id(beat.host), "_seq_no": seq_no, "_primary_term": 1}
        fed.take({**hit, "_source": ingested(beat.to_document(), at_us)})

    forgotten = fed.forget_before(now_us - 1_000_000)

    gone = ProcessFacts("host-a", 1, None).id
    assert forgotten.documents == {gone: (1, 1), heartbeat_document_id("host-b"): (11, 1)}
    assert set(fed.processes) == {ProcessFacts("host-a", 2, None).id}
    assert set(fed.heartbeats) == {"host-a"}
    assert set(fed.versions) == {
        ProcessFacts("host-a", 2, None).id,
        heartbeat_document_id("host-a"),
    }


def test_an_event_naming_rank_0_keeps_its_peer_through_the_search_engine() -> None:
    from npuwatch.parsers.hccl.model import CollectiveEvent, ProcessKey
    from npuwatch.parsers.hccl.shipped import event_document, event_from_document

    event = CollectiveEvent(
        "notify", ProcessKey("host-a", 7), 1_000, remote_rank=0, op_index=0, remote_device=0
    )
    again = event_from_document(event_document(event))
    assert (again.remote_rank, again.op_index, again.remote_device) == (0, 0, 0)
