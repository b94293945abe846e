"""States: documents the journal keeps by id, a later version taking the place of the earlier
(a process's topology, an agent's heartbeat), read by the sinks after their cursor."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from npuwatch.handoff import StateRow
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import CommitBatch, Journal, list_segments

NOON_S = 1_757_851_200.0


def state(id_: str, version: int, stream: str = "topology") -> StateRow:
    return StateRow(id_, stream, version, f'{{"id": "{id_}", "version": {version}}}')


def commit_in_a_new_segment(directory: Path, *rows: StateRow) -> None:
    journal = Journal(directory, clock=lambda: NOON_S)
    journal.open()  # each open starts a segment of its own
    try:
        journal.commit(CommitBatch(states=list(rows)))
    finally:
        journal.close()


def read_all(directory: Path) -> list[tuple[Position, StateRow]]:
    with JournalReader(directory) as reader:
        found, position = [], Position()
        while page := reader.states_after(position, limit=2):
            found.extend(page)
            position = page[-1][0]
        return found


def test_a_state_written_again_is_read_again_after_the_cursor_and_only_once(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path, clock=lambda: NOON_S)
    journal.open()
    try:
        journal.commit(CommitBatch(states=[state("a", 1), state("b", 1)]))
        with JournalReader(tmp_path) as reader:
            first = reader.states_after(Position())
            assert [row for _, row in first] == [state("a", 1), state("b", 1)]
            cursor = first[-1][0]
            journal.commit(CommitBatch(states=[state("a", 2)]))
            again = reader.states_after(cursor)
            assert [row for _, row in again] == [state("a", 2)]
            assert again[0][0] > cursor
            # the replaced row is gone from the segment: a reader from the start sees each id once
            assert [row for _, row in reader.states_after(Position())] == [
                state("b", 1),
                state("a", 2),
            ]
    finally:
        journal.close()


def test_replacing_the_newest_state_gives_it_a_new_position(tmp_path: Path) -> None:
    """SQLite gives a deleted newest row's id to the next insert unless told not to: a cursor
    standing on it would never see the new version."""
    journal = Journal(tmp_path, clock=lambda: NOON_S)
    journal.open()
    try:
        journal.commit(CommitBatch(states=[state("a", 1)]))
        ((at, _),) = read_all(tmp_path)
        journal.commit(CommitBatch(states=[state("a", 2)]))
        ((again, row),) = read_all(tmp_path)
        assert again > at and row == state("a", 2)
    finally:
        journal.close()


def test_states_are_read_across_segments_in_the_order_written(tmp_path: Path) -> None:
    commit_in_a_new_segment(tmp_path, state("a", 1), state("b", 1))
    commit_in_a_new_segment(tmp_path, state("a", 2))
    commit_in_a_new_segment(tmp_path, state("c", 1))
    assert [row for _, row in read_all(tmp_path)] == [
        state("a", 1),
        state("b", 1),
        state("a", 2),
        state("c", 1),
    ]
    with JournalReader(tmp_path) as reader:
        assert reader.states_after(reader.end()[2]) == []


def test_the_latest_version_of_every_state_is_what_an_agent_takes_up_at_its_start(
    tmp_path: Path,
) -> None:
    commit_in_a_new_segment(tmp_path, state("a", 1), state("b", 1))
    commit_in_a_new_segment(tmp_path, state("a", 2), state("c", 1))
    commit_in_a_new_segment(tmp_path, state("c", 2))
    with JournalReader(tmp_path) as reader:
        assert reader.latest_states() == {
            "a": state("a", 2),
            "b": state("b", 1),
            "c": state("c", 2),
        }


def test_a_segment_of_a_format_without_states_reads_as_none(tmp_path: Path) -> None:
    commit_in_a_new_segment(tmp_path, state("a", 1))
    ((_, path),) = list_segments(tmp_path)
    with sqlite3.connect(path) as db:  # as an agent before states wrote it
        db.execute("DROP TABLE states")
    with JournalReader(tmp_path) as reader:
        assert reader.states_after(Position()) == []
        assert reader.latest_states() == {}
        assert reader.end()[2] == Position(1, 0)


def test_states_alone_are_a_batch_worth_committing() -> None:
    assert CommitBatch(states=[state("a", 1)])
    assert not CommitBatch()
