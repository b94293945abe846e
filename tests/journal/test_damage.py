"""Reading around damage: a table read a page at a time steps over what SQLite cannot read and
serves every row it still can, before the damage and after it; each damaged segment is named
once; an error that is no damage (a lock) is raised, never read around."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from npuwatch.journal.block import BlockFormatError, decode_block, read_columns
from npuwatch.journal.damage import DamageNotice, is_damage, page_around_damage
from npuwatch.journal.query import search
from npuwatch.journal.question import Question
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import segment_path
from tests.journal.damaged_journal import overwrite_pages
from tests.journal.journal_builder import LogFile, cann_line, epoch_us, write_journal

MALFORMED = sqlite3.DatabaseError("database disk image is malformed")
T0 = epoch_us("2025-09-14T09:30:00")

# --- stepping over damage, on a model of a table --------------------------------------------


Fetch = Callable[[int, int], list[tuple[int]]]


def table(keys: range, damaged: set[int], page: set[int] | None = None) -> Fetch:
    """A fetch (`key >= first`) over rows `keys`: reading a damaged row fails, and so does a
    seek to a key on the damaged `page` of rows."""

    def fetch(first: int, limit: int) -> list[tuple[int]]:
        if page is not None and first in page:
            raise MALFORMED
        rows = [(key,) for key in keys if key >= first][:limit]
        if any(key in damaged for (key,) in rows):
            raise MALFORMED
        return rows

    return fetch


def read_all(fetch: Fetch, limit: int, told: list[object]) -> list[int]:
    found: list[int] = []
    after = 0
    while page := page_around_damage(fetch, lambda row: row[0], after, limit, told.append):
        found.extend(key for (key,) in page)
        after = page[-1][0]
    return found


@pytest.mark.parametrize("limit", [1, 4, 16, 1000])
def test_one_damaged_row_costs_that_row_alone(limit: int) -> None:
    told: list[object] = []

    found = read_all(table(range(1, 101), damaged={37}), limit, told)

    assert found == [key for key in range(1, 101) if key != 37]
    assert told and all(problem is MALFORMED for problem in told)


@pytest.mark.parametrize("limit", [1, 16, 1000])
def test_a_damaged_page_costs_its_rows_and_the_rows_after_it_are_read(limit: int) -> None:
    page = set(range(40, 60))
    told: list[object] = []

    found = read_all(table(range(1, 101), page, page), limit, told)

    assert found == [key for key in range(1, 101) if key not in page]


def test_damage_to_the_end_of_a_table_ends_the_reading_without_an_error() -> None:
    told: list[object] = []
    tail = set(range(91, 1_000_000))

    found = read_all(table(range(1, 101), tail, tail), 16, told)

    assert found == list(range(1, 91))


def test_rows_far_apart_are_found_again_after_damage() -> None:
    keys = range(1, 10**12, 10**9)  # the keys of a table rows were deleted from
    damaged = {keys[5]}

    found = read_all(table(keys, damaged), 4, [])

    assert found == [key for key in keys if key not in damaged]


def test_a_lock_is_raised_not_read_around() -> None:
    def locked(after: int, limit: int) -> list[tuple[int]]:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        page_around_damage(locked, lambda row: row[0], 0, 16, [].append)


@pytest.mark.parametrize(
    ("error", "damage"),
    [
        (sqlite3.DatabaseError("database disk image is malformed"), True),
        (sqlite3.DatabaseError("file is not a database"), True),
        (sqlite3.OperationalError("disk I/O error"), True),
        (sqlite3.OperationalError("no such table: blocks"), True),
        (sqlite3.OperationalError("database is locked"), False),
        (sqlite3.ProgrammingError("Cannot operate on a closed database."), False),
        (ValueError("not an SQLite error"), False),
    ],
)
def test_what_counts_as_damage(error: Exception, damage: bool) -> None:
    assert is_damage(error) is damage


def test_a_segment_is_named_once_however_often_its_damage_is_met() -> None:
    said: list[str] = []
    notice = DamageNotice(said.append)

    notice.damaged("/j/segment-00000002.db", MALFORMED)
    notice.unreadable("/j/segment-00000002.db", "file is not a database")
    notice.damaged("/j/segment-00000003.db", "block 4: unreadable block")

    assert said == [
        "journal segment /j/segment-00000002.db is damaged (database disk image is malformed): "
        "what cannot be read of it is left out, the rest of the journal is served; the file is "
        "left where it is (move it into /j/quarantine/ to keep it for a post-mortem)",
        "journal segment /j/segment-00000003.db is damaged (block 4: unreadable block): what "
        "cannot be read of it is left out, the rest of the journal is served; the file is left "
        "where it is (move it into /j/quarantine/ to keep it for a post-mortem)",
    ]


# --- a real segment with a page of its blocks damaged in the middle ---------------------------

BLOCKS = 300


def long_journal(directory: Path) -> list[str]:
    """Three segments of one file, a block a record, 100 blocks each (many pages of blocks);
    the lines, in order."""
    lines = [
        cann_line("INFO", "GE", 3300, T0 + n * 1000, f"[g.cc:1] [3301]record {n} " + "x" * 40)
        for n in range(BLOCKS)
    ]
    write_journal(directory, [LogFile("/r/debug/plog/plog-3300_1.log", "n", lines)], BLOCKS, 3)
    return lines


def leaf_pages(path: Path, name: str) -> list[int]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
            (name,),
        )
        return [int(row[0]) for row in rows]


def readable_by_id(path: Path) -> list[int]:
    """The block ids SQLite can still read one at a time and that decode (what reading around
    the damage must give)."""
    ids = []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        for block_id in range(1, BLOCKS + 1):
            try:
                rows = db.execute("SELECT payload FROM blocks WHERE id = ?", (block_id,))
                (payload,) = rows.fetchone() or (None,)
            except sqlite3.DatabaseError:
                continue
            if payload is None:
                continue
            try:
                read_columns(payload)
            except BlockFormatError:
                continue
            ids.append(block_id)
    return ids


def reader_lines(directory: Path, limit: int) -> list[str]:
    found = []
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.blocks_after(position, limit):
            found.extend(r.original for _, b in page for r in decode_block(b.payload))
            position = page[-1][0]
    return found


@pytest.fixture
def middle_page_damaged(tmp_path: Path) -> tuple[Path, list[str], list[str]]:
    """The journal, its lines, and the lines of its middle segment SQLite can still read."""
    lines = long_journal(tmp_path)
    path = segment_path(tmp_path, 2)
    pages = leaf_pages(path, "blocks")
    assert len(pages) >= 3, "the test needs blocks over several pages"
    overwrite_pages(path, [pages[len(pages) // 2]])
    in_segment = lines[BLOCKS // 3 : 2 * BLOCKS // 3]
    readable = [in_segment[block_id - 1] for block_id in readable_by_id(path)]
    assert 0 < len(readable) < len(in_segment)
    assert readable[0] == in_segment[0] and readable[-1] == in_segment[-1]
    return tmp_path, lines, readable


@pytest.mark.parametrize("limit", [1, 16])
def test_a_sink_gets_the_records_before_and_after_a_damaged_page_of_a_segment(
    middle_page_damaged: tuple[Path, list[str], list[str]],
    limit: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    directory, lines, readable = middle_page_damaged

    found = reader_lines(directory, limit)

    assert found == lines[: BLOCKS // 3] + readable + lines[2 * BLOCKS // 3 :]
    (warning,) = caplog.messages
    assert warning.startswith(f"journal segment {segment_path(directory, 2)} is damaged (")


def test_grep_prints_the_records_before_and_after_a_damaged_page_of_a_segment(
    middle_page_damaged: tuple[Path, list[str], list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory, lines, readable = middle_page_damaged

    hits = [hit.record.original for hit in search(directory, Question())]

    assert hits == lines[: BLOCKS // 3] + readable + lines[2 * BLOCKS // 3 :]
    assert capsys.readouterr().err.count("\n") == 1


def test_a_damaged_payload_costs_its_one_block(tmp_path: Path) -> None:
    noise = random.Random(5)  # text that does not compress: each payload spans pages
    lines = [
        cann_line(
            "INFO", "GE", 3300, T0 + n, f"[g.cc:1] [3301]record {n} {noise.randbytes(6000).hex()}"
        )
        for n in range(9)
    ]
    write_journal(tmp_path, [LogFile("/r/debug/plog/plog-3300_1.log", "n", lines)], 9, 1)
    path = segment_path(tmp_path, 1)
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        overflow = [
            int(row[0])
            for row in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'blocks' AND pagetype = 'overflow' "
                "ORDER BY pageno"
            )
        ]
    assert overflow, "payloads larger than a page overflow"
    overwrite_pages(path, [overflow[len(overflow) // 2]])
    readable = [lines[block_id - 1] for block_id in readable_by_id(path)]
    assert len(readable) == len(lines) - 1

    assert reader_lines(tmp_path, 4) == readable
