"""A journal of three segments, and every way its middle segment can be damaged: for the tests of
each reader of the journal (`grep`, the sinks' follower, `correlate --journal`, the agent's
start).

Every line says which segment holds it (`segment 2 record 4 …`), so that a test can tell what
was read of each. The damages are of two sorts: the segment cannot be read at all (garbage, cut
short, empty, a folder, a FIFO or a link in its place, its header overwritten), or a part of it
cannot be (its blocks do not decompress, or decompress to garbage; a page of one of its tables
or indexes is overwritten), and what SQLite can still read of it is served.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zstandard

from npuwatch.handoff import EventRow
from npuwatch.journal.block import BlockFormatError, decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import segment_path
from npuwatch.sinks.event_text import event_line
from tests.journal.journal_builder import JournalContents, LogFile, cann_line, epoch_us
from tests.journal.journal_builder import write_journal as write_segments

if TYPE_CHECKING:
    from npuwatch.journal.damage import DamageNotice

PLOG = "/r/debug/plog/plog-3300_20250914093000120.log"
DEVICE_LOG = "/r/debug/device-3/device-3300_20250914093000120.log"
RECORDS_PER_SEGMENT = 6
_LEVELS = ("INFO", "ERROR", "INFO", "WARNING", "DEBUG", "ERROR")
_T0 = epoch_us("2025-09-14T09:30:00")


def _lines(module: str, pid: int, file: str) -> list[str]:
    lines = []
    for number in range(3 * RECORDS_PER_SEGMENT):
        segment, index = divmod(number, RECORDS_PER_SEGMENT)
        level = _LEVELS[index]
        body = f"[task.cc:{number}] [{pid + 1}]segment {segment + 1} record {number} of {file}"
        if level == "ERROR":  # the shipped rules raise events on these
            body += ": notify wait timeout, error code E30009"
        lines.append(cann_line(level, module, pid, _T0 + number * 1_000_000, body))
    return lines


def journal_files() -> list[LogFile]:
    return [
        LogFile(PLOG, "node-7", _lines("HCCL", 3300, "plog")),
        LogFile(DEVICE_LOG, "node-7", _lines("RUNTIME", 3300, "device log")),
    ]


def write_journal(directory: Path) -> JournalContents:
    """Three segments: records 0-5 of each file in the first, 6-11 in the second, 12-17 in the
    third, each with an event for each of its ERROR records."""
    files = journal_files()
    contents = write_segments(directory, files, runs=3, segments=3, events=error_events(files))
    assert contents.segments == [1, 2, 3]
    return contents


def error_events(files: list[LogFile]) -> list[EventRow]:
    """An event for each ERROR record, whose message is its record's text."""
    rows = []
    for log in files:
        for record in log.records:
            if record.level != "ERROR":
                continue
            document = {
                "@timestamp": "2025-09-14T09:30:00Z",
                "message": record.message,
                "rule": {"id": "test.error-record"},
                "log": {"file": {"path": log.path}},
                "ascend": {"finding": {"severity": "error", "count": 1}},
            }
            rows.append(
                EventRow(
                    id=f"{log.key}-{record.offset}",
                    timestamp_us=record.timestamp_us,
                    rule="test.error-record",
                    category="test",
                    severity="error",
                    level="ERROR",
                    logger=record.logger,
                    code="E30009",
                    device=None,
                    host=log.host,
                    path=log.path,
                    file_key=log.key,
                    offset=record.offset,
                    pid=record.pid,
                    count=1,
                    document=json.dumps(document, separators=(",", ":")),
                )
            )
    return rows


def segment_of(line: str) -> int:
    """Which segment a line of this journal (a record's, an event's) is in; 0 for any other."""
    for segment in (1, 2, 3):
        if f"segment {segment} record " in line:
            return segment
    return 0


def event_lines_of(contents: JournalContents, segments: set[int]) -> list[str]:
    """The text lines of the events of `segments` (as `grep --events` and the console print
    them), in journal order."""
    lines = [event_line(row.document) for row in contents.events]
    in_order = sorted(lines, key=segment_of)  # stable: in a segment, as they were committed
    return [line for line in in_order if segment_of(line) in segments]


def lines_of(contents: JournalContents, segments: set[int], level: str | None = None) -> list[str]:
    """The record lines of `segments` (of `level`), in journal order: segment by segment, and
    in each, file by file as the blocks were written."""
    found = []
    for segment in sorted(segments):
        for log in contents.files:
            for line in log.lines:
                if segment_of(line) == segment and (level is None or line.startswith(f"[{level}]")):
                    found.append(line)
    return found


# --- the damages ------------------------------------------------------------------------------

Damage = Callable[[Path], None]


def overwritten_with_garbage(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(path.stat().st_size))


def cut_short(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(4096 + 100)


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def made_a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("not a segment", encoding="utf-8")


def made_a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def made_a_link(path: Path) -> None:
    """A link to an intact copy of the segment: a reader never follows one."""
    copy = path.parent.parent / f"elsewhere-{path.name}"
    path.rename(copy)
    path.symlink_to(copy)


def wal_made_a_fifo(path: Path) -> None:
    """A FIFO where SQLite looks for the segment's write-ahead log."""
    os.mkfifo(f"{path}-wal")


def shm_made_a_folder(path: Path) -> None:
    Path(f"{path}-shm").mkdir()


def header_overwritten(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.write(b"\xff" * 100)


def blocks_decompress_to_garbage(path: Path) -> None:
    """Every block a valid zstd frame (checksum and all) of bytes that are no block."""
    garbage = zstandard.ZstdCompressor(write_checksum=True).compress(b"\x02" + b"\x07" * 300)
    _update_blocks(path, b"s" + garbage)


def blocks_no_frames(path: Path) -> None:
    """Every block's payload bytes that no codec reads."""
    _update_blocks(path, b"s" + random.Random(3).randbytes(200))


def _update_blocks(path: Path, payload: bytes) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE blocks SET payload = ?", (payload,))


def page_overwritten(table: str) -> Damage:
    """The first page of `table` (a table or an index) overwritten with garbage, as a failing
    disk leaves it: SQLite says "database disk image is malformed" when it reads there."""

    def damage(path: Path) -> None:
        overwrite_pages(path, pages_of(path, table)[:1])

    damage.__name__ = f"a page of {table}"
    return damage


def pages_of(path: Path, table: str) -> list[int]:
    """The pages (numbered from 1) that hold `table`, from SQLite's own page map."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,))
        pages = [int(row[0]) for row in rows]
    assert pages, f"{path} has no page of {table}"
    return pages


def overwrite_pages(path: Path, pages: list[int], page_size: int = 4096) -> None:
    garbage = random.Random(11)
    with path.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * page_size)
            handle.write(garbage.randbytes(page_size))


def notable_texts_undecodable(path: Path) -> None:
    """Every line of the index of notable records a zstd frame cut short."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE notable SET original = ?", (b"\x28\xb5\x2f\xfd\x20",))


WHOLE_DAMAGES: dict[str, Damage] = {
    "overwritten with garbage": overwritten_with_garbage,
    "cut short": cut_short,
    "empty": emptied,
    "a folder": made_a_folder,
    "a FIFO": made_a_fifo,
    "a link": made_a_link,
    "a FIFO for its log": wal_made_a_fifo,
    "a folder for its shared memory": shm_made_a_folder,
    "its header overwritten": header_overwritten,
}
"""Damages after which nothing of the segment can be read."""

PART_DAMAGES: dict[str, Damage] = {
    "blocks that decompress to garbage": blocks_decompress_to_garbage,
    "blocks that are no zstd frames": blocks_no_frames,
    "a page of its blocks": page_overwritten("blocks"),
}
"""Damages after which the segment's records cannot be read from its blocks (its index of
notable records still answers)."""

DAMAGES = {**WHOLE_DAMAGES, **PART_DAMAGES}

INDEX_DAMAGES: dict[str, Damage] = {
    "a page of its notable records": page_overwritten("notable"),
    "a page of its index of levels": page_overwritten("notable_by_level"),
    "a page of its codes": page_overwritten("notable_codes"),
    "a page of its index of codes": page_overwritten("notable_codes_by_code"),
    "notable texts that do not decode": notable_texts_undecodable,
}
"""Damages to the index of notable records alone: the blocks still hold every record."""


def damage_segment(directory: Path, sequence: int, damage: Damage) -> Path:
    """Damage segment `sequence` of the journal at `directory` (its WAL folded in first, as a
    closed segment has it); its path."""
    path = segment_path(directory, sequence)
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("-wal", "-shm"):  # a reader's, left behind
        Path(f"{path}{side}").unlink(missing_ok=True)
    damage(path)
    return path


SEGMENT_TABLES = (
    "sqlite_schema", "meta", "sqlite_autoindex_meta_1", "blocks", "blocks_by_last", "notable",
    "notable_by_level", "notable_by_time", "notable_codes", "notable_codes_by_code", "events",
    "sqlite_autoindex_events_1", "states", "sqlite_autoindex_states_1", "sqlite_sequence",
    "checkpoints", "sqlite_autoindex_checkpoints_1", "dictionaries",
)  # fmt: skip
"""Every table and index a segment has: each can be the one a failing disk damages."""


def readable_in_segment(path: Path) -> tuple[list[str], list[str]]:
    """The record lines and event documents of the segment at `path` that SQLite can still
    read one by one (by key) and that decode: what reading around its damage must give."""
    lines: list[str] = []
    documents: list[str] = []
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        # No regular file (SQLite would wait for ever on a FIFO): nothing is to be read.
        if os.path.lexists(file) and not stat.S_ISREG(file.lstat().st_mode):
            return lines, documents
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return lines, documents
    with closing(db):
        for key in range(1, 100):
            try:
                row = db.execute("SELECT payload FROM blocks WHERE id = ?", (key,)).fetchone()
                lines.extend(record.original for record in decode_block(row[0]))
            except (sqlite3.Error, BlockFormatError, TypeError):
                continue
        for key in range(1, 100):
            try:
                row = db.execute("SELECT document FROM events WHERE seq = ?", (key,)).fetchone()
                if row is not None and isinstance(json.loads(row[0]), dict):
                    documents.append(row[0])
            except (sqlite3.Error, ValueError, TypeError):
                continue
    return lines, documents


def reader_lines(directory: Path, notice: DamageNotice | None = None) -> list[str]:
    """Every record line a JournalReader gives, in order (what a sink is handed)."""
    found = []
    with JournalReader(directory, **_told(notice)) as reader:
        position = Position()
        while page := reader.blocks_after(position, 4):
            for _, block in page:
                found.extend(record.original for record in decode_block(block.payload))
            position = page[-1][0]
    return found


def reader_events(directory: Path, notice: DamageNotice | None = None) -> list[str]:
    """Every event document a JournalReader gives, in order."""
    found = []
    with JournalReader(directory, **_told(notice)) as reader:
        position = Position()
        while page := reader.events_after(position, 4):
            found.extend(document for _, document in page)
            position = page[-1][0]
    return found


def _told(notice: DamageNotice | None) -> dict[str, Any]:
    return {} if notice is None else {"notice": notice}
