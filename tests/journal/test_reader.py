"""Reading the journal a page at a time across segments: in order, every entry once, past
segments that retention deleted or that cannot be read, with bounded memory."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.segment import StoredBlock
from npuwatch.journal.store import CommitBatch, Journal, JournalSettings, segment_path
from tests.journal.conftest import epoch_us, event, numbered_blocks, open_segment_files

NOON_S = epoch_us("2025-09-14T12:00:00") / 1_000_000
START = Position()


def write_segments(directory: Path, blocks: list[int], events: int = 0) -> None:
    """One segment per entry of `blocks`, with that many blocks (numbered on from segment to
    segment) and `events` events each (`e0`, `e1`, ... likewise, documents `{"e":0}` ...)."""
    first_block = first_event = 0
    for count in blocks:
        journal = Journal(directory, clock=lambda: NOON_S)
        journal.open()
        try:
            rows = [event(f"e{n}", document(n)) for n in range(first_event, first_event + events)]
            journal.commit(CommitBatch(numbered_blocks(first_block, count), rows))
        finally:
            journal.close()
        first_block += count
        first_event += events


def document(number: int) -> str:
    """The document of event `e<number>` (every event's document is a JSON object)."""
    return f'{{"e":{number}}}'


def text(block: StoredBlock) -> str:
    (record,) = decode_block(block.payload)
    return record.original.rsplit("]", 1)[1]


def steps(first: int, count: int) -> list[str]:
    return [f"step {index} finished" for index in range(first, first + count)]


def block_pages(
    reader: JournalReader, limit: int, position: Position = START
) -> list[list[tuple[Position, str]]]:
    pages = []
    while page := reader.blocks_after(position, limit):
        pages.append([(at, text(block)) for at, block in page])
        position = page[-1][0]
    return pages


# --- in order, every entry once ---------------------------------------------------------------


def test_blocks_after_pages_across_segments_in_order_with_every_block_once(
    tmp_path: Path,
) -> None:
    write_segments(tmp_path, [5, 5, 5])
    with JournalReader(tmp_path) as reader:
        pages = block_pages(reader, limit=4)
    assert [len(page) for page in pages] == [4, 1, 4, 1, 4, 1]
    entries = [entry for page in pages for entry in page]
    assert [text for _, text in entries] == steps(0, 15)
    assert [at for at, _ in entries] == [
        Position(segment, row) for segment in (1, 2, 3) for row in range(1, 6)
    ]


def test_events_after_pages_across_segments_in_order_with_every_event_once(
    tmp_path: Path,
) -> None:
    write_segments(tmp_path, [1, 0, 1], events=3)
    pages = []
    position = Position()
    with JournalReader(tmp_path) as reader:
        while page := reader.events_after(position, limit=2):
            pages.append(page)
            position = page[-1][0]
    assert [len(page) for page in pages] == [2, 1, 2, 1, 2, 1]
    assert [document for page in pages for _, document in page] == [document(n) for n in range(9)]
    assert [at for page in pages for at, _ in page] == [
        Position(segment, seq) for segment in (1, 2, 3) for seq in (1, 2, 3)
    ]


def test_end_is_after_the_last_block_and_the_last_event(tmp_path: Path) -> None:
    write_segments(tmp_path, [5, 5, 4], events=2)
    with JournalReader(tmp_path) as reader:
        assert reader.end() == (Position(3, 4), Position(3, 2), Position(3, 0))
        assert open_segment_files(tmp_path) == {"segment-00000003.db"}
        blocks_end, events_end, _ = reader.end()
        assert reader.blocks_after(blocks_end) == []
        assert reader.events_after(events_end) == []
        write_segments(tmp_path, [2], events=1)
        assert [(at, text(block)) for at, block in reader.blocks_after(blocks_end)] == [
            (Position(4, 1), "step 0 finished"),
            (Position(4, 2), "step 1 finished"),
        ]
        assert reader.events_after(events_end) == [(Position(4, 1), document(0))]


def test_the_end_of_a_journal_just_reopened_is_the_start_of_its_new_segment(
    tmp_path: Path,
) -> None:
    write_segments(tmp_path, [3])
    journal = Journal(tmp_path, clock=lambda: NOON_S)
    journal.open()
    try:
        with JournalReader(tmp_path) as reader:
            assert reader.end() == (Position(2, 0), Position(2, 0), Position(2, 0))
    finally:
        journal.close()


@pytest.mark.parametrize("name", ["empty", "missing"])
def test_the_end_of_a_journal_without_segments_is_the_beginning(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name
    if name == "empty":
        directory.mkdir()
    with JournalReader(directory) as reader:
        assert reader.end() == (Position(), Position(), Position())
        assert reader.blocks_after(Position()) == []
        assert reader.events_after(Position()) == []


# --- segments that go away or cannot be read --------------------------------------------------


def test_a_segment_deleted_by_retention_between_pages_is_skipped_without_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_segments(tmp_path, [5, 5, 5])
    journal = Journal(tmp_path, JournalSettings(max_age_s=86_400), clock=lambda: NOON_S)
    journal.open()
    try:
        with caplog.at_level(logging.DEBUG), JournalReader(tmp_path) as reader:
            first = reader.blocks_after(Position(), limit=4)
            old = NOON_S - 2 * 86_400
            for sequence in (1, 3):  # retention looks at age; only 2 is old
                os.utime(segment_path(tmp_path, sequence), (NOON_S, NOON_S))
            os.utime(segment_path(tmp_path, 2), (old, old))
            assert journal.apply_retention() == [segment_path(tmp_path, 2)]
            rest = block_pages(reader, limit=4, position=first[-1][0])
            assert reader.skipped_segments == 0
    finally:
        journal.close()
    texts = [text(block) for _, block in first] + [t for page in rest for _, t in page]
    assert texts == steps(0, 5) + steps(10, 5)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_an_unreadable_segment_in_the_middle_is_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_segments(tmp_path, [5, 5, 5], events=1)
    segment_path(tmp_path, 2).write_bytes(b"this is not a journal segment\n" * 200)
    with caplog.at_level(logging.DEBUG), JournalReader(tmp_path) as reader:
        pages = block_pages(reader, limit=4)
        events = reader.events_after(Position(), limit=10)
        events += reader.events_after(events[-1][0], limit=10)
        for _ in range(3):  # a reader still before segment 2 passes it on every call
            assert reader.events_after(Position(1, 1)) == [(Position(3, 1), document(2))]
        assert reader.skipped_segments == 1
    assert [t for page in pages for _, t in page] == steps(0, 5) + steps(10, 5)
    assert events == [(Position(1, 1), document(0)), (Position(3, 1), document(2))]
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (warning.name, warning.levelname) == ("npuwatch.journal.reader", "WARNING")
    assert "segment-00000002.db" in warning.getMessage()


# --- bounded memory ---------------------------------------------------------------------------


def test_a_large_backlog_is_paged_with_at_most_limit_blocks_and_one_open_segment(
    tmp_path: Path,
) -> None:
    write_segments(tmp_path, [500, 500, 500, 500])
    pages = []
    position = Position()
    most_open = 0
    with JournalReader(tmp_path) as reader:
        while page := reader.blocks_after(position, limit=16):
            most_open = max(most_open, len(open_segment_files(tmp_path)))
            pages.append([text(block) for _, block in page])
            position = page[-1][0]
    assert max(len(page) for page in pages) == 16
    assert len(pages) == 4 * 32  # 31 full pages and one of 4 per segment
    assert [t for page in pages for t in page] == steps(0, 2000)
    assert most_open == 1
    assert open_segment_files(tmp_path) == set()


def test_paging_events_through_many_segments_keeps_one_segment_open(tmp_path: Path) -> None:
    write_segments(tmp_path, [0] * 6, events=20)
    documents = []
    position = Position()
    most_open = 0
    with JournalReader(tmp_path) as reader:
        while page := reader.events_after(position, limit=16):
            most_open = max(most_open, len(open_segment_files(tmp_path)))
            assert len(page) <= 16
            documents += [document for _, document in page]
            position = page[-1][0]
    assert documents == [document(n) for n in range(120)]
    assert most_open == 1
