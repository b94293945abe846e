"""Answering `grep` questions from the journal without reading what cannot match.

Two plans. A question that names a level of WARNING or above, or an error code, is answered from
the index of notable records (one row each, see rows.NOTABLE_LEVELS): an SQLite index lookup,
however large the journal. Any other question reads blocks (block_scan.py), but only the blocks
whose summary (time range, levels, modules, pids, host, device) can hold a match.

Hits come in journal order (segment, block, position), which is commit order.

A damaged segment is read around (damage.py): where its index cannot be read, its blocks answer
the rest of the question; what neither can give is left out, with one line naming the segment.

The index plan is timed against `rg` (bench/grep_bench.py) and most of its time is the
interpreter starting: this module and what it imports stay free of dataclasses, pathlib and
the block codecs (see docs/adr/0002-grep-start-up.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from npuwatch.journal.damage import DamageNotice, is_damage
from npuwatch.journal.question import (
    SOURCE_COLUMNS,
    Directory,
    Hit,
    Question,
    ReadOnlySegment,
    Where,
    add_field_filters,
    open_segments,
    say_on_stderr,
)
from npuwatch.journal.row_text import RowTextError
from npuwatch.journal.rows import FileSource, StoredRecord


def search(
    directory: Directory, question: Question, notice: DamageNotice | None = None
) -> Iterator[Hit]:
    """Every record in the journal at `directory` that answers `question`. What a damaged
    segment does not let be read is left out, and told once per segment to `notice` (by
    default, a line on standard error)."""
    notice = notice if notice is not None else DamageNotice(say_on_stderr)
    triggers = _event_triggers(directory, question, notice) if question.categories else None
    if triggers is not None and not triggers:
        return
    if not question.indexed:
        # The block plan needs the block codecs, which the index plan does not pay for.
        from npuwatch.journal.block_scan import from_blocks  # noqa: PLC0415

    for segment in open_segments(directory, notice):
        if question.indexed:
            yield from _indexed(segment, question, triggers)
        else:
            yield from from_blocks(segment, question, triggers)


def _indexed(
    segment: ReadOnlySegment, question: Question, triggers: set[tuple[str, int]] | None
) -> Iterator[Hit]:
    """The index plan's hits; where the segment's index cannot be read (a damaged page, a
    text that does not decode), the rest of its hits come from its blocks, which hold every
    record the index holds."""
    last = (0, -1)
    try:
        for hit in _from_index(segment, question, triggers):
            yield hit
            last = (hit.block_id, hit.position)
        return
    except RowTextError as error:
        segment.damaged(error)
    except sqlite3.DatabaseError as error:
        if not is_damage(error):
            raise
        segment.damaged(error)
    from npuwatch.journal.block_scan import from_blocks  # noqa: PLC0415 - see search()

    yield from from_blocks(segment, question, triggers, after=last)


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
    add_field_filters(where, question, "n.", host_column="b.host", written_column="b.written_us")
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
        original = decode(stored)  # RowTextError: the caller reads the rest from the blocks
        if pattern is not None and pattern.search(original) is None:
            continue
        source = FileSource(*src)
        if triggers is not None and (source.file_key, offset) not in triggers:
            continue
        record = StoredRecord(ts, level, logger, pid, codes.split(), 0, offset, None, original)
        yield Hit(segment.sequence, block_id, position, source, record, device)


def _event_triggers(
    directory: Directory, question: Question, notice: DamageNotice
) -> set[tuple[str, int]]:
    """(file key, offset) of the records that triggered events of the asked categories."""
    found: set[tuple[str, int]] = set()
    categories = sorted(question.categories)
    for segment in open_segments(directory, notice):
        rows = segment.rows_after(
            "SELECT seq, file_key, offset FROM events WHERE seq >= ? AND category IN "
            # an event without a file key or an offset names no record
            f"({','.join('?' * len(categories))}) AND file_key IS NOT NULL "
            "AND offset IS NOT NULL ORDER BY seq LIMIT ?",
            categories,
        )
        found.update((str(key), int(offset)) for _, key, offset in rows)
    return found
