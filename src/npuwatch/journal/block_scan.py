"""The block plan of `grep`: questions the index of notable records cannot answer (a pattern
alone, INFO or DEBUG records, a module) read blocks, but only those whose summary (time range,
levels, modules, pids, host, device) can hold a match; in each, the pattern is searched in the
block's whole text at C speed, and only the records where a match starts are built and tested
(block.decode_matching)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from npuwatch.journal.block import decode_block, decode_matching
from npuwatch.journal.question import Hit, Question, ReadOnlySegment, Where
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.journal.segment import BLOCK_COLUMNS, block_from_row


def from_blocks(
    segment: ReadOnlySegment, question: Question, triggers: set[tuple[str, int]] | None
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
    text_has = block_prefilter(question.pattern)
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
            records = (
                enumerate(decode_block(block.payload))
                if text_has is None
                else decode_matching(block.payload, text_has)
            )
            for position, record in records:
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


_CONTEXT_SENSITIVE = ("\\A", "\\Z", "(?<!", "(?!")
"""Constructs that can match a record alone but not the same record inside the block's text
(a negative look at the neighbouring character, the start or end of the whole string)."""


def block_prefilter(pattern: re.Pattern[str] | None) -> re.Pattern[str] | None:
    """A pattern that finds something in a block's text whenever `pattern` finds something in
    one of its records, or None when no such pattern is known. The records are joined by
    newlines, so `^` and `$` must also match at each line (MULTILINE); a pattern that can look
    past its record's start or end and fail because of what is there is not used."""
    if pattern is None or any(part in pattern.pattern for part in _CONTEXT_SENSITIVE):
        return None
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)
