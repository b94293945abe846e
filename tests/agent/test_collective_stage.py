"""What the agent ships for the cluster correlator: process documents with every fact and
when, collective events, heartbeats — few documents, and nothing lost across a restart."""

from __future__ import annotations

import json
from datetime import timezone
from pathlib import Path

from npuwatch.agent.collective_stage import CollectiveSettings, CollectiveWatch
from npuwatch.handoff import EventRow, StateRow
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent, Fact
from npuwatch.parsers.hccl.shipped import (
    Heartbeat,
    ProcessFacts,
    event_from_document,
    heartbeat_document_id,
    process_document_id,
)
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Record
from tests.conftest import TREES

HOST = "host-b"
PLOG = next((TREES / "hccl-timeout" / HOST / "ascend/log/debug/plog").glob("plog-3306_*.log"))
VICTIM = next((TREES / "hccl-timeout/host-a/ascend/log/debug/plog").glob("plog-3300_*.log"))
"""A rank that timed out: its file ends inside its task-exception block."""
WALL_US = 1_757_842_500_000_000


def records_of(path: Path = PLOG, host: str = HOST) -> list[Record]:
    return parse_bytes(path.read_bytes(), LocalClock(timezone.utc), path=str(path), host=host)


def watch(**settings: float) -> CollectiveWatch:
    return CollectiveWatch(HOST, "9.9.9", CollectiveSettings(**settings))


def documents(states: list[StateRow]) -> dict[str, dict[str, object]]:
    return {row.id: json.loads(row.document) for row in states}


def test_a_process_s_facts_are_one_document_per_communicator_holding_what_scan_extracts() -> None:
    records = records_of()
    expected = [
        item
        for item in CollectiveExtractor().feed(records)
        if isinstance(item, Fact) and item.name != "heard"
    ]
    one = watch()
    _, early = one.observe(records, "k", now_s=100.0)
    assert early == []  # a burst is written a second after it started
    _, states = one.tick(now_s=101.0, wall_us=WALL_US)
    states = [row for row in states if row.id != heartbeat_document_id(HOST)]
    shipped = [
        fact
        for row in states
        for fact in ProcessFacts.from_document(json.loads(row.document)).facts()
    ]
    assert sorted(shipped) == sorted(fact._replace(evidence=None) for fact in expected)
    ids = {row.id for row in states}
    assert process_document_id(HOST, 3306, None) in ids
    assert all(row.stream == "topology" for row in states)


def test_collective_events_become_event_rows_the_correlator_reads_back_whole() -> None:
    records = records_of()
    extractor = CollectiveExtractor()
    expected = [
        i for i in extractor.feed(records) + extractor.finish() if isinstance(i, CollectiveEvent)
    ]
    one = watch()
    rows, _ = one.observe(records, "file-key", now_s=100.0)
    closed, _ = one.finish(now_s=101.0, wall_us=WALL_US)
    rows += closed
    assert [event_from_document(json.loads(row.document)) for row in rows] == expected
    assert {row.rule for row in rows} == {f"collective.{event.kind}" for event in expected}
    assert all(isinstance(row, EventRow) and row.category == "collective" for row in rows)
    assert len({row.id for row in rows}) == len(rows)


def test_the_same_lines_again_write_nothing_and_a_fact_said_later_waits_a_minute() -> None:
    records = records_of()
    one = watch()
    one.observe(records, "k", now_s=100.0)
    _, first = one.tick(now_s=101.0, wall_us=WALL_US)
    assert first
    _, again = one.observe(records, "k", now_s=101.5)
    assert again == []  # the same facts at the same times
    later = [r for r in records_of() if r.logger == "HCCL" and "[HCCL_ENV]" in r.original][:1]
    later[0].timestamp_us = (later[0].timestamp_us or 0) + 5_000_000
    _, soon = one.observe(later, "k", now_s=102.0)
    assert soon == []  # said again: written at most once a minute
    beat = heartbeat_document_id(HOST)
    _, waited = one.tick(now_s=160.0, wall_us=WALL_US)
    assert [row.id for row in waited if row.id != beat] == []
    _, waited = one.tick(now_s=161.0, wall_us=WALL_US)
    assert [row.id for row in waited if row.id != beat] == [process_document_id(HOST, 3306, None)]


def test_the_burst_of_a_communicator_s_init_is_one_document_not_one_a_line() -> None:
    records = records_of()
    one = watch()
    written = []
    for number, record in enumerate(records):  # a line a batch, as a slow writer gives them
        _, states = one.observe([record], "k", now_s=100.0 + number * 0.001)
        written.extend(states)
    _, rest = one.tick(now_s=102.0, wall_us=WALL_US)
    written.extend(row for row in rest if row.id != heartbeat_document_id(HOST))
    ids = [row.id for row in written]
    assert len(ids) == len(set(ids))  # each document once


def test_the_heartbeat_lists_the_processes_still_writing_and_their_newest_line() -> None:
    records = records_of()
    one = watch(heartbeat_interval_s=30.0)
    one.observe(records, "k", now_s=100.0)
    _, states = one.tick(now_s=100.5, wall_us=WALL_US)
    (beat,) = [row for row in states if row.id == heartbeat_document_id(HOST)]
    heartbeat = Heartbeat.from_document(json.loads(beat.document))
    newest = max(r.timestamp_us for r in records if r.timestamp_us is not None)
    assert heartbeat == Heartbeat(HOST, WALL_US, 30.0, {3306: newest}, "9.9.9")
    _, soon = one.tick(now_s=110.0, wall_us=WALL_US + 10_000_000)
    assert heartbeat_document_id(HOST) not in {row.id for row in soon}  # after the interval
    _, due = one.tick(now_s=131.0, wall_us=WALL_US + 31_000_000)
    assert [row.id for row in due] == [heartbeat_document_id(HOST)]


def test_a_dying_process_s_last_failure_block_is_closed_once_it_is_quiet() -> None:
    """Live, no line comes after a dead process's last block to close it; scan closes it at
    the end of its input, the agent when the process has been quiet a while."""
    records = records_of(VICTIM, "host-a")
    one = CollectiveWatch("host-a", "9.9.9", CollectiveSettings(quiet_close_s=5.0))
    one.observe(records, "k", now_s=100.0)
    extractor = CollectiveExtractor()
    extractor.feed(records)
    held = [item for item in extractor.finish() if isinstance(item, CollectiveEvent)]
    assert held  # the file ends inside a block
    late, _ = one.tick(now_s=104.0, wall_us=WALL_US)
    assert late == []  # quiet for less than quiet_close
    closed, _ = one.tick(now_s=105.5, wall_us=WALL_US)
    assert [event_from_document(json.loads(row.document)) for row in closed] == held


def test_a_restarted_agent_adds_to_the_document_it_wrote_before() -> None:
    records = records_of()
    first = watch()
    first.observe(records[:12], "k", now_s=100.0)
    _, written = first.tick(now_s=102.0, wall_us=WALL_US)
    before = {row.id: row for row in written if row.id != heartbeat_document_id(HOST)}

    class Journal:
        def __call__(self, id_: str) -> StateRow | None:
            return before.get(id_)

        def close(self) -> None:
            pass

    again = CollectiveWatch(HOST, "9.9.9", CollectiveSettings(), Journal())
    again.observe(records[12:], "k", now_s=200.0)
    _, after = again.tick(now_s=202.0, wall_us=WALL_US)
    latest = {**before, **{row.id: row for row in after}}

    def facts(rows: dict[str, StateRow]) -> set[Fact]:
        return {
            fact
            for id_, row in rows.items()
            if id_ != heartbeat_document_id(HOST)
            for fact in ProcessFacts.from_document(json.loads(row.document)).facts()
        }

    fresh = CollectiveExtractor().feed(records[12:])
    said_after = {
        f._replace(evidence=None) for f in fresh if isinstance(f, Fact) and f.name != "heard"
    }
    assert facts(before) and said_after
    assert facts(before) | said_after == facts(latest)  # nothing written before is lost


def test_a_process_silent_for_long_is_forgotten_and_its_documents_are_kept() -> None:
    one = watch(forget_after_s=3600.0)
    one.observe(records_of(), "k", now_s=100.0)
    _, states = one.tick(now_s=101.0, wall_us=WALL_US)
    assert len(states) > 1
    _, beat = one.tick(now_s=100.0 + 3600.0, wall_us=WALL_US)
    heartbeat = Heartbeat.from_document(json.loads(beat[-1].document))
    assert heartbeat.processes == {}


def test_a_stopping_agent_writes_what_changed_and_a_last_heartbeat_at_once() -> None:
    records = records_of()
    one = watch()
    one.tick(now_s=99.0, wall_us=WALL_US)  # the first heartbeat, before any record
    one.observe(records, "k", now_s=100.0)
    _, states = one.finish(now_s=100.1, wall_us=WALL_US + 1_100_000)
    ids = [row.id for row in states]
    assert process_document_id(HOST, 3306, None) in ids  # not waiting its second
    beat = Heartbeat.from_document(json.loads(states[-1].document))
    assert ids[-1] == heartbeat_document_id(HOST)
    assert beat.clock_us == WALL_US + 1_100_000 and 3306 in beat.processes
