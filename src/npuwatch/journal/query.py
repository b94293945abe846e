"""Answering `grep` questions from the journal without reading what cannot match.

Two plans. A question that names a level of WARNING or above, or an error code, is answered from
the index of notable records (one row each, see rows.NOTABLE_LEVELS): an SQLite index lookup,
however large the journal. Any other question reads blocks (block_scan.py), but only the blocks
whose summary (time range, levels, modules, pids, host, device) can hold a match.

Hits come in journal order (segment, block, position), which is commit order.

The index plan is timed against `rg` (bench/grep_bench.py) and most of its time is the
interpreter starting: this module and what it imports stay free of dataclasses, pathlib and
the block codecs (see docs/adr/0002-grep-start-up.md).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from npuwatch.journal.layout import open_readonly, segment_files
from npuwatch.journal.rows import NOTABLE_LEVELS, FileSource, StoredRecord

SOURCE_COLUMNS = "b.file_key, b.path, b.host, b.kind, b.channel, b.device, b.file_pid, b.timezone"

Directory = str | os.PathLike[str]


class Question(NamedTuple):
    """What `grep` asks; empty sets and None mean "any"."""

    pattern: re.Pattern[str] | None = None
    since_us: int | None = None
    until_us: int | None = None
    levels: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()
    codes: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    device: int | None = None
    host: str | None = None
    pid: int | None = None

    @property
    def indexed(self) -> bool:
        """Whether the index of notable records holds every possible answer."""
        return bool(self.codes) or (bool(self.levels) and self.levels <= NOTABLE_LEVELS)


class Hit(NamedTuple):
    segment: int
    block_id: int
    position: int
    source: FileSource
    record: StoredRecord
    device: int | None = None


class Where:
    """An SQL condition built clause by clause, with its parameters."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.parameters: list[object] = []

    def add(self, clause: str, *parameters: object) -> None:
        self.clauses.append(clause)
        self.parameters.extend(parameters)

    def any_of(self, column: str, values: Sequence[object]) -> None:
        self.add(f"{column} IN ({','.join('?' * len(values))})", *values)

    def members(self, column: str, values: Sequence[str]) -> None:
        """`column` is a space-delimited set holding any of `values`."""
        self.add(
            "(" + " OR ".join(f"{column} LIKE ?" for _ in values) + ")",
            *(f"% {value} %" for value in values),
        )

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


class ReadOnlySegment(NamedTuple):
    sequence: int
    db: sqlite3.Connection

    def query(self, sql: str, parameters: Sequence[object]) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, parameters).fetchall()


def add_field_filters(where: Where, question: Question, prefix: str, host_column: str) -> None:
    """The filters that the notable index and the events table both have as columns (level,
    module, time, device, pid, host), on the columns named `prefix` + level and so on."""
    if question.levels:
        where.any_of(f"{prefix}level", sorted(question.levels))
    if question.modules:
        where.any_of(f"{prefix}logger", sorted(question.modules))
    if question.since_us is not None:
        where.add(f"{prefix}timestamp_us >= ?", question.since_us)
    if question.until_us is not None:
        where.add(f"{prefix}timestamp_us <= ?", question.until_us)
    if question.device is not None:
        where.add(f"{prefix}device = ?", question.device)
    if question.pid is not None:
        where.add(f"{prefix}pid = ?", question.pid)
    if question.host is not None:
        where.add(f"{host_column} = ?", question.host)


def open_segments(directory: Directory) -> Iterator[ReadOnlySegment]:
    """Each segment of the journal in turn, open read-only (closed when the next is asked)."""
    for sequence, path in segment_files(directory):
        db = open_readonly(path)
        try:
            yield ReadOnlySegment(sequence, db)
        finally:
            db.close()


def search(directory: Directory, question: Question) -> Iterator[Hit]:
    """Every record in the journal at `directory` that answers `question`."""
    triggers = _event_triggers(directory, question) if question.categories else None
    if triggers is not None and not triggers:
        return
    if not question.indexed:
        # The block plan needs the block codecs, which the index plan does not pay for.
        from npuwatch.journal.block_scan import from_blocks  # noqa: PLC0415

    for segment in open_segments(directory):
        if question.indexed:
            yield from _from_index(segment, question, triggers)
        else:
            yield from from_blocks(segment, question, triggers)


def _from_index(
    segment: ReadOnlySegment, question: Question, triggers: set[tuple[str, int]] | None
) -> Iterator[Hit]:
    where = Where()
    if question.codes:
        codes = sorted(question.codes)
        where.add(
            "n.rowid IN (SELECT notable FROM notable_codes WHERE code IN "
            f"({','.join('?' * len(codes))}))",
            *codes,
        )
    add_field_filters(where, question, "n.", host_column="b.host")
    rows = segment.query(
        "SELECT n.block_id, n.position, n.timestamp_us, n.level, n.logger, n.pid, n.codes, "
        f"n.offset, n.original, n.device, {SOURCE_COLUMNS} "
        "FROM notable n JOIN blocks b ON b.id = n.block_id "
        f"WHERE {where.sql()} ORDER BY n.block_id, n.position",
        where.parameters,
    )
    pattern = question.pattern
    for block_id, position, ts, level, logger, pid, codes, offset, original, device, *src in rows:
        if pattern is not None and pattern.search(str(original)) is None:
            continue
        source = FileSource(*src)
        if triggers is not None and (source.file_key, offset) not in triggers:
            continue
        record = StoredRecord(ts, level, logger, pid, codes.split(), 0, offset, None, original)
        yield Hit(segment.sequence, block_id, position, source, record, device)


def _event_triggers(directory: Directory, question: Question) -> set[tuple[str, int]]:
    """(file key, offset) of the records that triggered events of the asked categories."""
    found: set[tuple[str, int]] = set()
    categories = sorted(question.categories)
    for segment in open_segments(directory):
        rows = segment.query(
            "SELECT file_key, offset FROM events WHERE category IN "
            f"({','.join('?' * len(categories))}) AND file_key IS NOT NULL "
            "AND offset IS NOT NULL",  # an event without either names no record
            categories,
        )
        found.update((str(key), int(offset)) for key, offset in rows)
    return found


def search_events(directory: Directory, question: Question) -> Iterator[str]:
    """The events (JSON documents, as journaled) that answer `question`, each once however
    often journaled."""
    seen: set[str] = set()
    for segment in open_segments(directory):
        where = Where()
        if question.categories:
            where.any_of("category", sorted(question.categories))
        if question.codes:
            where.any_of("code", sorted(question.codes))
        add_field_filters(where, question, "", host_column="host")
        rows = segment.query(
            f"SELECT id, document FROM events WHERE {where.sql()} ORDER BY seq", where.parameters
        )
        for event_id, document in rows:
            if event_id in seen:
                continue
            seen.add(str(event_id))
            if question.pattern is not None and question.pattern.search(str(document)) is None:
                continue
            yield str(document)
