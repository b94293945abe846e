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

from collections.abc import Iterator

from npuwatch.journal.question import (
    SOURCE_COLUMNS,
    Directory,
    Hit,
    Question,
    ReadOnlySegment,
    Where,
    add_field_filters,
    leave_out_damaged,
    open_segments,
)
from npuwatch.journal.row_text import RowTextError
from npuwatch.journal.rows import FileSource, StoredRecord


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
    decode = segment.texts.decode
    for block_id, position, ts, level, logger, pid, codes, offset, stored, device, *src in rows:
        try:
            original = decode(stored)
        except RowTextError as error:
            leave_out_damaged(segment.sequence, error)
            continue
        if pattern is not None and pattern.search(original) is None:
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
