"""One journal segment: a SQLite database in WAL mode holding blocks, events and checkpoints.

Records, events and the source offsets they were read up to are written in one transaction, so
the offsets on disk never run ahead of the records (nothing lost) nor behind them (nothing read
twice): after `kill -9` the agent resumes exactly where the last commit left it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from npuwatch.handoff import CHECKPOINT_FIELDS, Checkpoint, EventRow, StateRow
from npuwatch.journal.block import EncodedBlock
from npuwatch.journal.damage import DamageNotice, is_damage, page_around_damage
from npuwatch.journal.layout import open_readonly
from npuwatch.journal.row_text import SCHEMA as ROW_TEXT_SCHEMA
from npuwatch.journal.row_text import RowTextDecoder, RowTextEncoder, RowTextError
from npuwatch.journal.rows import FileSource

log = logging.getLogger(__name__)

FORMAT_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (
    id INTEGER PRIMARY KEY,
    file_key TEXT NOT NULL,
    path TEXT NOT NULL,
    host TEXT,
    kind TEXT,
    channel TEXT,
    device INTEGER,
    file_pid INTEGER,
    timezone TEXT,
    first_us INTEGER,
    last_us INTEGER,
    count INTEGER NOT NULL,
    levels TEXT NOT NULL,
    modules TEXT NOT NULL,
    codes TEXT NOT NULL,
    pids TEXT NOT NULL,
    first_offset INTEGER,
    end_offset INTEGER,
    written_us INTEGER NOT NULL,
    raw_bytes INTEGER NOT NULL,
    payload BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_by_last ON blocks (last_us);
CREATE TABLE IF NOT EXISTS notable (
    block_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    timestamp_us INTEGER,
    level TEXT,
    logger TEXT,
    pid INTEGER,
    code TEXT,
    codes TEXT NOT NULL,
    device INTEGER,
    offset INTEGER,
    original TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notable_by_level ON notable (level, timestamp_us);
CREATE INDEX IF NOT EXISTS notable_by_time ON notable (timestamp_us);
CREATE TABLE IF NOT EXISTS notable_codes (code TEXT NOT NULL, notable INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS notable_codes_by_code ON notable_codes (code);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    timestamp_us INTEGER,
    rule TEXT NOT NULL,
    category TEXT,
    severity TEXT NOT NULL,
    level TEXT,
    logger TEXT,
    code TEXT,
    device INTEGER,
    host TEXT,
    path TEXT,
    file_key TEXT,
    offset INTEGER,
    pid INTEGER,
    count INTEGER NOT NULL,
    document TEXT NOT NULL,
    written_us INTEGER
);
CREATE TABLE IF NOT EXISTS states (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    stream TEXT NOT NULL,
    updated_us INTEGER NOT NULL,
    document TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    file_key TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    device INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    fingerprint_length INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    offset INTEGER NOT NULL,
    replay_from INTEGER NOT NULL,
    size INTEGER NOT NULL,
    updated_us INTEGER NOT NULL
);
"""

_EVENT_COLUMNS_ADDED = (
    # When the event was journaled (grep --journaled-since); NULL in a segment made before.
    "written_us INTEGER",
)
_CHECKPOINT_COLUMNS_ADDED = (
    "mark_end INTEGER NOT NULL DEFAULT 0",
    "mark_length INTEGER NOT NULL DEFAULT 0",
    "mark_digest TEXT NOT NULL DEFAULT ''",
    "generation INTEGER NOT NULL DEFAULT 0",
)
"""Checkpoint columns newer than the first journal format, added when a segment is opened for
writing: to a new one, and to one an older agent wrote (their defaults mean "not known")."""
CHECKPOINT_COLUMNS = ", ".join(CHECKPOINT_FIELDS)

Sync = Literal["full", "normal"]


@dataclass(frozen=True)
class BlockToWrite:
    source: FileSource
    block: EncodedBlock
    first_offset: int | None
    end_offset: int | None


@dataclass(frozen=True)
class StoredBlock:
    """A block row as read back: where it came from, its summary and its payload."""

    id: int
    source: FileSource
    first_us: int | None
    last_us: int | None
    count: int
    first_offset: int | None
    end_offset: int | None
    payload: bytes


BLOCK_COLUMNS = (
    "id, file_key, path, host, kind, channel, device, file_pid, timezone, first_us, last_us, "
    "count, first_offset, end_offset, payload"
)
EVENT_COLUMNS = (
    "seq, id, timestamp_us, rule, category, severity, level, logger, code, device, host, path, "
    "file_key, offset, pid, count, document"
)


def block_from_row(row: Sequence[object]) -> StoredBlock:
    (id_, key, path, host, kind, channel, device, file_pid, zone, first, last, count, start, end,
     payload) = row  # fmt: skip
    source = FileSource(key, path, host, kind, channel, device, file_pid, zone)  # type: ignore[arg-type]
    return StoredBlock(id_, source, first, last, count, start, end, payload)  # type: ignore[arg-type]


class Segment:
    """An open segment file. Not shared between threads: each thread opens its own.

    Its rows are read around damage (journal/damage.py): what cannot be read is told to
    `damaged` (by default, a warning in the log, once) and left out; the rest is served."""

    def __init__(
        self,
        path: Path,
        sequence: int,
        sync: Sync = "full",
        readonly: bool = False,
        damaged: Callable[[object], None] | None = None,
        being_made: bool = True,
    ) -> None:
        """`being_made`, for a segment opened read-only: it may be the newest one, whose file
        the agent may still be making (empty, or without its tables): that is not damage."""
        self.path = path
        self.sequence = sequence
        self.readonly = readonly
        self._encoder: RowTextEncoder | None = None
        if damaged is None:
            damaged = partial(DamageNotice(log.warning).damaged, path)
        self._damaged = damaged
        if readonly:
            self._db = open_readonly(path, being_made)
            self._decoder = RowTextDecoder(self._db)
            return
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
            self._db.executescript(_SCHEMA + ROW_TEXT_SCHEMA)
            _add_columns(self._db, "checkpoints", _CHECKPOINT_COLUMNS_ADDED)
            _add_columns(self._db, "events", _EVENT_COLUMNS_ADDED)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT_VERSION,))
            self._encoder = RowTextEncoder(self._db)
            self._decoder = RowTextDecoder(self._db)
        except BaseException:  # a full disk, or a file that is not a database
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def checkpoint_wal(self) -> None:
        """Fold the write-ahead log into the database file (when the segment is closed)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def quick_check(self) -> str | None:
        """None when SQLite finds the file sound, else what it found."""
        rows = self._db.execute("PRAGMA quick_check").fetchall()
        result = "; ".join(str(row[0]) for row in rows)
        return None if result == "ok" else result

    def has_checkpoints(self) -> bool:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'checkpoints'").fetchone()
        return row is not None

    def checkpoints(self) -> list[Checkpoint]:
        rows = self._db.execute(f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints").fetchall()
        return [Checkpoint(*row) for row in rows]

    def append(
        self,
        blocks: Iterable[BlockToWrite],
        events: Iterable[EventRow],
        checkpoints: Iterable[Checkpoint],
        forget: Iterable[str],
        written_us: int,
        snapshot: bool = False,
        states: Sequence[StateRow] = (),
    ) -> None:
        """Write blocks, events, states and checkpoints in one transaction. `snapshot`: the
        checkpoints are every checkpoint there is (a new segment starts with the full set)."""
        db = self._db
        encoder = self._encoder
        if encoder is None:
            raise ValueError(f"segment {self.path} is open read-only")
        db.execute("BEGIN IMMEDIATE")
        try:
            notable_id = self._insert_blocks(encoder, blocks, written_us)
            self._insert_events(encoder, events, written_us)
            encoder.train_when_due("notable", notable_id)
            if encoder.untrained("events"):  # asks SQLite for the count only until trained
                encoder.train_when_due("events", self.last_event_seq())
            self._replace_states(states)
            self._replace_checkpoints(checkpoints, forget, snapshot)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _insert_blocks(
        self, encoder: RowTextEncoder, blocks: Iterable[BlockToWrite], written_us: int
    ) -> int:
        """The blocks, their notable records and those records' codes; the last notable id."""
        db = self._db
        encode = encoder.encode
        # Row ids are given, not asked back per row, so that every insert is one
        # executemany: an ERROR storm makes every record notable.
        block_id = int(db.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0])
        notable_id = int(db.execute("SELECT coalesce(max(rowid), 0) FROM notable").fetchone()[0])
        block_rows: list[tuple[object, ...]] = []
        notable_rows: list[tuple[object, ...]] = []
        code_rows: list[tuple[str, int]] = []
        for item in blocks:
            block_id += 1
            block_rows.append((block_id, *_block_values(item, written_us)))
            for n in item.block.notable:
                notable_id += 1
                notable_rows.append(
                    (
                        notable_id,
                        block_id,
                        n.position,
                        n.timestamp_us,
                        n.level,
                        n.logger,
                        n.pid,
                        n.code,
                        n.codes,
                        n.device,
                        n.offset,
                        encode("notable", n.original),
                    )
                )
                if n.code is not None:
                    code_rows.extend((code, notable_id) for code in n.codes.split())
        db.executemany(
            "INSERT INTO blocks (id, file_key, path, host, kind, channel, device, file_pid, "
            "timezone, first_us, last_us, count, levels, modules, codes, pids, first_offset, "
            "end_offset, written_us, raw_bytes, payload) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            block_rows,
        )
        db.executemany(
            "INSERT INTO notable (rowid, block_id, position, timestamp_us, level, logger, "
            "pid, code, codes, device, offset, original) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            notable_rows,
        )
        db.executemany("INSERT INTO notable_codes VALUES (?, ?)", code_rows)
        return notable_id

    def _insert_events(
        self, encoder: RowTextEncoder, events: Iterable[EventRow], written_us: int
    ) -> None:
        """Events, once each: a replayed event has the id it had (INSERT OR IGNORE)."""
        encode = encoder.encode
        self._db.executemany(
            f"INSERT OR IGNORE INTO events ({EVENT_COLUMNS.removeprefix('seq, ')}, "
            "written_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    e.id,
                    e.timestamp_us,
                    e.rule,
                    e.category,
                    e.severity,
                    e.level,
                    e.logger,
                    e.code,
                    e.device,
                    e.host,
                    None,  # the document holds the path, and no question asks for it
                    e.file_key,
                    e.offset,
                    e.pid,
                    e.count,
                    encode("events", e.document),
                    written_us,
                )
                for e in events
            ],
        )

    def _replace_states(self, states: Sequence[StateRow]) -> None:
        """Each state row takes the place of the one with its id, with a new seq."""
        if not states:
            return
        db = self._db
        db.executemany("DELETE FROM states WHERE id = ?", [(row.id,) for row in states])
        db.executemany(
            "INSERT INTO states (id, stream, updated_us, document) VALUES (?,?,?,?)",
            [(row.id, row.stream, row.updated_us, row.document) for row in states],
        )

    def _replace_checkpoints(
        self, checkpoints: Iterable[Checkpoint], forget: Iterable[str], snapshot: bool
    ) -> None:
        db = self._db
        db.executemany("DELETE FROM checkpoints WHERE file_key = ?", [(k,) for k in forget])
        marks = ",".join("?" * len(CHECKPOINT_FIELDS))
        db.executemany(
            f"INSERT OR REPLACE INTO checkpoints ({CHECKPOINT_COLUMNS}) VALUES ({marks})",
            [checkpoint.row() for checkpoint in checkpoints],
        )
        if snapshot:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('checkpoints', 'complete')")

    def blocks_after(self, block_id: int, limit: int) -> list[StoredBlock]:
        rows = self._page(
            f"SELECT {BLOCK_COLUMNS} FROM blocks WHERE id >= ? ORDER BY id LIMIT ?", block_id, limit
        )
        return [block_from_row(row) for row in rows]

    def last_block_id(self) -> int:
        return self._last_key("blocks", "id")

    def last_event_seq(self) -> int:
        return self._last_key("events", "seq")

    def known_events(self, ids: Sequence[str]) -> set[str]:
        """Which of `ids` this segment holds events of (none it cannot read)."""
        if not ids:
            return set()
        try:
            rows = self._db.execute(
                f"SELECT id FROM events WHERE id IN ({','.join('?' * len(ids))})", list(ids)
            ).fetchall()
        except sqlite3.DatabaseError as error:
            if not (_missing_table(error) or is_damage(error)):
                raise
            return set()
        return {str(row[0]) for row in rows}

    def events_after(self, seq: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, event id, document JSON) of the events after `seq` (up to `limit`; fewer
        when some of a page's texts are damaged, none only at the end)."""
        while rows := self._page(
            "SELECT seq, id, document FROM events WHERE seq >= ? ORDER BY seq LIMIT ?", seq, limit
        ):
            found = []
            for seq_, id_, stored in rows:
                try:
                    found.append((int(seq_), str(id_), self._decoder.decode(stored)))
                except RowTextError as error:  # damaged on disk: the reader goes on without it
                    self._damaged(f"event {seq_}: {error}")
            if found:
                return found
            seq = int(rows[-1][0])
        return []

    def states_after(self, seq: int, limit: int) -> list[tuple[int, StateRow]]:
        """(seq, row) of the states written after `seq` (none in a segment of a journal
        format without them)."""
        rows = self._page(
            "SELECT seq, id, stream, updated_us, document FROM states WHERE seq >= ? "
            "ORDER BY seq LIMIT ?",
            seq,
            limit,
        )
        return [(int(row[0]), StateRow(row[1], row[2], int(row[3]), row[4])) for row in rows]

    def state(self, id_: str) -> StateRow | None:
        """The row of one state, by id (None when this segment has none, or cannot say)."""
        try:
            row = self._db.execute(
                "SELECT id, stream, updated_us, document FROM states WHERE id = ?", (id_,)
            ).fetchone()
        except sqlite3.DatabaseError as error:
            if _missing_table(error):
                return None
            if not is_damage(error):
                raise
            self._damaged(error)
            return None
        return None if row is None else StateRow(row[0], row[1], int(row[2]), row[3])

    def last_state_seq(self) -> int:
        return self._last_key("states", "seq")

    def _page(self, sql: str, after: int, limit: int) -> list[tuple[Any, ...]]:
        """Up to `limit` rows of `sql` after key `after`, read around damage (`sql` selects its
        key first, and takes the first key to read, `key >= ?`, and the limit); none from a
        table this segment does not have (an older format, or a segment the agent is making)."""

        def fetch(first: int, count: int) -> list[tuple[Any, ...]]:
            try:
                return self._db.execute(sql, (first, count)).fetchall()
            except sqlite3.OperationalError as error:
                if _missing_table(error):
                    return []
                raise

        return page_around_damage(fetch, _first_int, after, limit, self._damaged)

    def _last_key(self, table: str, key: str) -> int:
        """The largest key of `table` (0 when it has no rows, or is not there). Where the
        largest cannot be read, the largest that can: every key is read, around the damage."""
        try:
            row = self._db.execute(f"SELECT max({key}) FROM {table}").fetchone()
            return int(row[0] or 0)
        except sqlite3.DatabaseError as error:
            if _missing_table(error):
                return 0
            if not is_damage(error):
                raise
            self._damaged(error)
        last = 0
        keys = f"SELECT {key} FROM {table} WHERE {key} >= ? ORDER BY {key} LIMIT ?"
        while page := self._page(keys, last, 4096):
            last = int(page[-1][0])
        return last

    def query(self, sql: str, parameters: Sequence[object]) -> list[tuple[Any, ...]]:
        """Run a read-only query (the `grep` planner builds these from its filters)."""
        return self._db.execute(sql, parameters).fetchall()


def _missing_table(error: sqlite3.Error) -> bool:
    """A segment written before its table existed, or still being made, opened read-only (one
    opened for writing gets every table)."""
    return isinstance(error, sqlite3.OperationalError) and "no such table" in str(error)


def _first_int(row: Sequence[Any]) -> int:
    return int(row[0])


def _add_columns(db: sqlite3.Connection, table: str, columns: Sequence[str]) -> None:
    """The columns a segment made by an earlier version lacks (it is written on after an
    upgrade)."""
    present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    for column in columns:
        if column.split()[0] not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def _block_values(item: BlockToWrite, written_us: int) -> tuple[object, ...]:
    source, block = item.source, item.block
    summary = block.summary
    return (
        source.file_key, source.path, source.host, source.kind, source.channel, source.device,
        source.file_pid, source.timezone, summary.first_us, summary.last_us, summary.count,
        summary.levels, summary.modules, summary.codes, summary.pids, item.first_offset,
        item.end_offset, written_us, block.raw_bytes, block.payload,
    )  # fmt: skip
