"""A segment: one SQLite file where blocks, events and checkpoints are written in one
transaction, and read back in order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from npuwatch.handoff import EventRow
from npuwatch.journal.block import decode_block
from npuwatch.journal.rows import FileSource
from npuwatch.journal.segment import Segment
from tests.journal.conftest import (
    block_of,
    checkpoint,
    epoch_us,
    event,
    numbered_blocks,
    parse_plog,
    plog_line,
)

WRITTEN_US = 1_757_842_800_000_000


@pytest.fixture
def segment(tmp_path: Path) -> Iterator[Segment]:
    opened = Segment(tmp_path / "segment-00000001.db", 1)
    yield opened
    opened.close()


def _count(segment: Segment, table: str) -> int:
    return int(segment.query(f"SELECT count(*) FROM {table}", [])[0][0])


def _texts(segment: Segment) -> list[str]:
    return [
        record.original.rsplit("]", 1)[1]
        for block in segment.blocks_after(0, 10_000)
        for record in decode_block(block.payload)
    ]


# --- one transaction --------------------------------------------------------------------------


def test_an_append_writes_its_blocks_events_and_checkpoints(segment: Segment) -> None:
    segment.append(numbered_blocks(0, 3), [event("e1")], [checkpoint("a", 300)], [], WRITTEN_US)
    assert _texts(segment) == ["step 0 finished", "step 1 finished", "step 2 finished"]
    assert segment.events_after(0, 10) == [(1, "e1", "{}")]
    assert segment.checkpoints() == [checkpoint("a", 300)]


def _failing_events(rows: list[EventRow]) -> Iterator[EventRow]:
    yield from rows
    raise RuntimeError("the batch builder failed half-way")


def test_an_error_after_the_blocks_are_inserted_leaves_nothing_of_the_append(
    segment: Segment,
) -> None:
    segment.append(numbered_blocks(0, 2), [event("e1")], [checkpoint("a", 200)], [], WRITTEN_US)
    with pytest.raises(RuntimeError, match="half-way"):
        segment.append(
            numbered_blocks(2, 3),
            _failing_events([event("e2")]),
            [checkpoint("a", 500)],
            [],
            WRITTEN_US,
        )
    assert _texts(segment) == ["step 0 finished", "step 1 finished"]
    assert segment.events_after(0, 10) == [(1, "e1", "{}")]
    assert segment.checkpoints() == [checkpoint("a", 200)]
    assert (_count(segment, "notable"), _count(segment, "notable_codes")) == (0, 0)


def test_a_checkpoint_the_database_refuses_undoes_the_blocks_and_events_before_it(
    segment: Segment,
) -> None:
    error = parse_plog(plog_line(7, "ERROR", "HCCL", "notify wait timeout, error code E30009"))
    broken = replace(checkpoint("b", 90), fingerprint=None)  # NOT NULL column
    with pytest.raises(sqlite3.IntegrityError):
        segment.append([block_of(error)], [event("e1")], [broken], [], WRITTEN_US, snapshot=True)
    for table in ("blocks", "notable", "notable_codes", "events", "checkpoints"):
        assert _count(segment, table) == 0, table
    assert not segment.has_checkpoints()
    # The segment is not left inside the failed transaction: the next append goes through.
    segment.append([block_of(error)], [event("e1")], [checkpoint("b", 90)], [], WRITTEN_US)
    assert (_count(segment, "blocks"), _count(segment, "notable_codes")) == (1, 1)


# --- checkpoints ------------------------------------------------------------------------------


def test_a_checkpoint_replaces_the_one_with_the_same_file_key(segment: Segment) -> None:
    segment.append([], [], [checkpoint("a", 100), checkpoint("b", 50)], [], WRITTEN_US)
    segment.append([], [], [checkpoint("a", 250)], [], WRITTEN_US)
    by_key = sorted(segment.checkpoints(), key=lambda c: c.file_key)
    assert by_key == [checkpoint("a", 250), checkpoint("b", 50)]


def test_forget_deletes_the_checkpoint_of_a_file(segment: Segment) -> None:
    segment.append([], [], [checkpoint("a", 100), checkpoint("b", 50)], [], WRITTEN_US)
    segment.append([], [], [], ["a", "never-seen"], WRITTEN_US)
    assert segment.checkpoints() == [checkpoint("b", 50)]


def test_a_file_forgotten_and_checkpointed_in_one_append_keeps_the_new_checkpoint(
    segment: Segment,
) -> None:
    segment.append([], [], [checkpoint("a", 100)], [], WRITTEN_US)
    segment.append([], [], [checkpoint("a", 7)], ["a"], WRITTEN_US)
    assert segment.checkpoints() == [checkpoint("a", 7)]


def test_only_a_snapshot_append_marks_the_segment_as_holding_every_checkpoint(
    segment: Segment,
) -> None:
    segment.append([], [], [checkpoint("a", 100)], [], WRITTEN_US)
    assert not segment.has_checkpoints()
    segment.append([], [], [checkpoint("a", 100)], [], WRITTEN_US, snapshot=True)
    assert segment.has_checkpoints()


# --- events -----------------------------------------------------------------------------------


def test_an_event_with_an_id_already_stored_is_stored_once_and_keeps_its_first_document(
    segment: Segment,
) -> None:
    segment.append([], [event("e1", '{"n": 1}'), event("e1", '{"n": 2}')], [], [], WRITTEN_US)
    segment.append([], [event("e1", '{"n": 3}'), event("e2", '{"n": 4}')], [], [], WRITTEN_US)
    assert segment.events_after(0, 10) == [(1, "e1", '{"n": 1}'), (2, "e2", '{"n": 4}')]
    assert segment.last_event_seq() == 2


def test_events_after_pages_in_sequence_order(segment: Segment) -> None:
    segment.append([], [event(f"e{index}", f'"{index}"') for index in range(7)], [], [], WRITTEN_US)
    assert [seq for seq, _, _ in segment.events_after(0, 3)] == [1, 2, 3]
    assert segment.events_after(3, 3) == [(4, "e3", '"3"'), (5, "e4", '"4"'), (6, "e5", '"5"')]
    assert segment.events_after(6, 3) == [(7, "e6", '"6"')]
    assert segment.events_after(7, 3) == []


# --- blocks -----------------------------------------------------------------------------------


def test_blocks_after_pages_in_id_order_across_appends(segment: Segment) -> None:
    for first, count in ((0, 4), (4, 4), (8, 2)):
        segment.append(numbered_blocks(first, count), [], [], [], WRITTEN_US)
    pages = [[block.id for block in segment.blocks_after(after, 4)] for after in (0, 4, 8, 10)]
    assert pages == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10], []]
    assert segment.last_block_id() == 10
    assert _texts(segment) == [f"step {index} finished" for index in range(10)]


def test_a_block_row_gives_back_its_source_time_range_offsets_and_payload(
    segment: Segment,
) -> None:
    lines = "".join(plog_line(index) + "\n" for index in (10, 11, 12))
    records = parse_plog(lines)
    source = FileSource(
        "fd01-9-cc", "/x/run/device-2/device-4100_1.log", "node-7", "device", "run", 2, 4100, "UTC"
    )
    segment.append([block_of(records, source)], [], [], [], WRITTEN_US)
    (block,) = segment.blocks_after(0, 10)
    assert block.id == 1
    assert block.source == source
    assert (block.first_us, block.last_us) == (
        epoch_us("2025-09-14T09:00:10"),
        epoch_us("2025-09-14T09:00:12"),
    )
    assert (block.count, block.first_offset, block.end_offset) == (3, 0, len(lines))
    assert [record.original for record in decode_block(block.payload)] == lines.splitlines()


def test_notable_rows_and_their_codes_point_at_their_block_and_position(
    segment: Segment,
) -> None:
    first = parse_plog(
        plog_line(1, "INFO")
        + "\n"
        + plog_line(2, "ERROR", "HCCL", "notify wait timeout, error code E30009")
        + "\n"
    )
    second = parse_plog(
        plog_line(3, "WARNING", "RUNTIME", "stream 7 is slow")
        + "\n"
        + plog_line(4, "INFO")
        + "\n"
        + plog_line(5, "ERROR", "GE", "build failed: EE1001 after EI0002")
        + "\n"
    )
    segment.append([block_of(first)], [], [], [], WRITTEN_US)
    segment.append([block_of(second)], [], [], [], WRITTEN_US)
    notable = segment.query(
        "SELECT rowid, block_id, position, level, logger, code, codes, offset FROM notable "
        "ORDER BY rowid",
        [],
    )
    assert notable == [
        (1, 1, 1, "ERROR", "HCCL", "E30009", " E30009 ", first[1].offset),
        (2, 2, 0, "WARNING", "RUNTIME", None, " ", 0),
        (3, 2, 2, "ERROR", "GE", "EE1001", " EE1001 EI0002 ", second[2].offset),
    ]
    codes = segment.query("SELECT code, notable FROM notable_codes ORDER BY code", [])
    assert codes == [("E30009", 1), ("EE1001", 3), ("EI0002", 3)]
    # Each row's position finds its record in its block.
    for block_id, position, expected in ((1, 1, first[1]), (2, 2, second[2])):
        (block,) = segment.blocks_after(block_id - 1, 1)
        assert decode_block(block.payload)[position].original == expected.original


# --- files ------------------------------------------------------------------------------------


def test_a_sound_segment_passes_its_quick_check(segment: Segment) -> None:
    segment.append(numbered_blocks(0, 2), [], [], [], WRITTEN_US)
    assert segment.quick_check() is None


@pytest.mark.parametrize("folder", ["journal#1", "what?", "100%20full"])
def test_a_segment_in_a_folder_named_with_uri_characters_opens_read_only(
    tmp_path: Path, folder: str
) -> None:
    directory = tmp_path / folder
    directory.mkdir()
    writer = Segment(directory / "segment-00000001.db", 1)
    writer.append(numbered_blocks(0, 2), [], [], [], WRITTEN_US)
    reader = Segment(directory / "segment-00000001.db", 1, readonly=True)
    try:
        assert reader.last_block_id() == 2
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.query("DELETE FROM blocks", [])
    finally:
        reader.close()
        writer.close()
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [folder]


# --- the checkpoints of an older journal -------------------------------------------------------


def test_a_segment_an_older_agent_wrote_gains_the_checkpoint_mark_and_keeps_its_checkpoints(
    tmp_path: Path,
) -> None:
    """Segments written before checkpoints had a read mark and a generation: opening one for
    writing adds the columns; its checkpoints read back with the mark unknown, and new ones
    keep theirs."""
    path = tmp_path / "segment-00000001.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE checkpoints (file_key TEXT PRIMARY KEY, path TEXT NOT NULL, "
            "device INTEGER NOT NULL, inode INTEGER NOT NULL, fingerprint_length INTEGER NOT "
            "NULL, fingerprint TEXT NOT NULL, offset INTEGER NOT NULL, replay_from INTEGER NOT "
            "NULL, size INTEGER NOT NULL, updated_us INTEGER NOT NULL)"
        )
        db.execute("INSERT INTO checkpoints VALUES ('old', 'a.log', 1, 2, 16, 'f', 30, 30, 40, 5)")
    opened = Segment(path, 1)
    try:
        assert [
            (c.file_key, c.offset, c.mark_length, c.generation) for c in opened.checkpoints()
        ] == [("old", 30, 0, 0)]
        marked = replace(
            checkpoint("new", 300), mark_end=300, mark_length=8, mark_digest="d", generation=2
        )
        opened.append([], [], [marked], [], WRITTEN_US)
        assert sorted(opened.checkpoints(), key=lambda c: c.file_key)[0] == marked
    finally:
        opened.close()
