"""Answering `grep` questions from the journal without reading what cannot match.

Two plans. A question that names a level of WARNING or above, or an error code, is answered from
the index of notable records (one row each, see block.NOTABLE_LEVELS): an SQLite index lookup,
however large the journal. Any other question reads blocks, but only the blocks whose summary
(time range, levels, modules, pids, host, device) can hold a match, and within a block the text
is searched once before any record is looked at.

Hits come in journal order (segment, block, position), which is commit order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.journal.block import NOTABLE_LEVELS, StoredRecord, decode_block
from npuwatch.journal.segment import BLOCK_COLUMNS, FileSource, Segment, block_from_row
from npuwatch.journal.store import list_segments

_SOURCE_COLUMNS = "b.file_key, b.path, b.host, b.kind, b.channel, b.device, b.file_pid, b.timezone"


@dataclass(frozen=True)
class Question:
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


@dataclass
class Hit:
    segment: int
    block_id: int
    position: int
    source: FileSource
    record: StoredRecord
    device: int | None = None


@dataclass
class Where:
    """An SQL condition built clause by clause, with its parameters."""

    clauses: list[str] = field(default_factory=list)
    parameters: list[object] = field(default_factory=list)

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


def open_segments(directory: Path) -> Iterator[Segment]:
    for sequence, path in list_segments(directory):
        segment = Segment(path, sequence, readonly=True)
        try:
            yield segment
        finally:
            segment.close()


def search(directory: Path, question: Question) -> Iterator[Hit]:
    """Every record in the journal at `directory` that answers `question`."""
    triggers = _event_triggers(directory, question) if question.categories else None
    if triggers is not None and not triggers:
        return
    for segment in open_segments(directory):
        if question.indexed:
            yield from _from_index(segment, question, triggers)
        else:
            yield from _from_blocks(segment, question, triggers)


def _from_index(
    segment: Segment, question: Question, triggers: set[tuple[str, int]] | None
) -> Iterator[Hit]:
    where = Where()
    if question.codes:
        codes = sorted(question.codes)
        where.add(
            "n.rowid IN (SELECT notable FROM notable_codes WHERE code IN "
            f"({','.join('?' * len(codes))}))",
            *codes,
        )
    if question.levels:
        where.any_of("n.level", sorted(question.levels))
    if question.modules:
        where.any_of("n.logger", sorted(question.modules))
    if question.since_us is not None:
        where.add("n.timestamp_us >= ?", question.since_us)
    if question.until_us is not None:
        where.add("n.timestamp_us <= ?", question.until_us)
    if question.device is not None:
        where.add("n.device = ?", question.device)
    if question.pid is not None:
        where.add("n.pid = ?", question.pid)
    if question.host is not None:
        where.add("b.host = ?", question.host)
    rows = segment.query(
        "SELECT n.block_id, n.position, n.timestamp_us, n.level, n.logger, n.pid, n.codes, "
        f"n.offset, n.original, n.device, {_SOURCE_COLUMNS} "
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


def _from_blocks(
    segment: Segment, question: Question, triggers: set[tuple[str, int]] | None
) -> Iterator[Hit]:
    where = Where()
    if question.since_us is not None:
        where.add("last_us >= ?", question.since_us)
    if question.until_us is not None:
        where.add("first_us <= ?", question.until_us)
    if question.levels:
        where.members("levels", sorted(question.levels))
    if question.modules:
        where.members("modules", sorted(question.modules))
    if question.pid is not None:
        where.members("pids", [str(question.pid)])
    if question.host is not None:
        where.add("host = ?", question.host)
    if question.device is not None:
        # Host logs carry the device in the body, not the path: those blocks must be read.
        where.add("(device = ? OR device IS NULL)", question.device)
    if triggers is not None:
        where.any_of("file_key", sorted({key for key, _ in triggers}))
    last_id = 0
    while True:  # a page of blocks at a time: memory stays bounded on a large journal
        rows = segment.query(
            f"SELECT {BLOCK_COLUMNS} FROM blocks WHERE id > ? AND {where.sql()} "
            "ORDER BY id LIMIT 16",
            [last_id, *where.parameters],
        )
        if not rows:
            return
        for row in rows:
            block = block_from_row(row)
            last_id = block.id
            records = decode_block(block.payload)
            for position, record in enumerate(records):
                if _matches(record, question, block.source, triggers):
                    device = block.source.device
                    if question.device is not None and device is None:
                        device = _body_device(record, block.source)
                        if device != question.device:
                            continue
                    yield Hit(segment.sequence, block.id, position, block.source, record, device)


def _matches(
    record: StoredRecord,
    question: Question,
    source: FileSource,
    triggers: set[tuple[str, int]] | None,
) -> bool:
    if question.pattern is not None and question.pattern.search(record.original) is None:
        return False
    ts = record.timestamp_us
    if question.since_us is not None and (ts is None or ts < question.since_us):
        return False
    if question.until_us is not None and (ts is None or ts > question.until_us):
        return False
    if question.levels and record.level not in question.levels:
        return False
    if question.modules and record.logger not in question.modules:
        return False
    if question.pid is not None and record.pid != question.pid:
        return False
    return triggers is None or (source.file_key, record.offset or 0) in triggers


def _body_device(record: StoredRecord, source: FileSource) -> int | None:
    from npuwatch.journal.documents import to_record  # noqa: PLC0415 - the parser, only if needed

    return to_record(record, source).device


def _event_triggers(directory: Path, question: Question) -> set[tuple[str, int]]:
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


def search_events(directory: Path, question: Question) -> Iterator[dict[str, object]]:
    """The events (as documents) that answer `question`, each once however often journaled."""
    seen: set[str] = set()
    for segment in open_segments(directory):
        where = Where()
        if question.categories:
            where.any_of("category", sorted(question.categories))
        if question.codes:
            where.any_of("code", sorted(question.codes))
        if question.levels:
            where.any_of("level", sorted(question.levels))
        if question.modules:
            where.any_of("logger", sorted(question.modules))
        if question.since_us is not None:
            where.add("timestamp_us >= ?", question.since_us)
        if question.until_us is not None:
            where.add("timestamp_us <= ?", question.until_us)
        if question.device is not None:
            where.add("device = ?", question.device)
        if question.host is not None:
            where.add("host = ?", question.host)
        if question.pid is not None:
            where.add("pid = ?", question.pid)
        rows = segment.query(
            f"SELECT id, document FROM events WHERE {where.sql()} ORDER BY seq", where.parameters
        )
        for event_id, document in rows:
            if event_id in seen:
                continue
            seen.add(str(event_id))
            if question.pattern is not None and question.pattern.search(str(document)) is None:
                continue
            yield json.loads(str(document))
