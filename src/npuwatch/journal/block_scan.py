"""The block plan of `grep`: questions the index of notable records cannot answer (a pattern
alone, INFO or DEBUG records, a module) read blocks, but only those whose summary (time range,
levels, modules, pids, host, device) can hold a match; in each, the pattern is searched in the
block's whole text at C speed, and only the records where a match starts are built and tested
(block_search.py).

Decompressing the blocks is a third of this plan's time, and zstd frees the interpreter while
it works: the next block is unpacked in a thread while this one is searched (on the 1M-line
journal of bench/anchors.py, 0.13 s instead of 0.20 s for the 73 blocks on two cores). In a
format-3 block the thread tests the frames' trigram filters and decompresses only the frames
that may hold the pattern's literal (frame_search.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from npuwatch.journal.block import BlockFormatError
from npuwatch.journal.block_search import BlockSearch, decode_matching
from npuwatch.journal.frame_search import OpenedFrames, frames_matching, unpack_for
from npuwatch.journal.question import (
    Hit,
    Question,
    ReadOnlySegment,
    Where,
    add_journaled_filters,
)
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.journal.segment import BLOCK_COLUMNS, StoredBlock, block_from_row

_UNPACKED_AHEAD = 2
"""Blocks unpacked before they are searched: enough to keep the thread busy, few enough that
memory stays a few blocks (a block is a few MiB uncompressed)."""


def from_blocks(
    segment: ReadOnlySegment,
    question: Question,
    triggers: set[tuple[str, int]] | None,
    after: tuple[int, int] = (0, -1),
) -> Iterator[Hit]:
    """The hits of `segment`'s blocks, from the record after `after` (block id, position) on.
    A block that does not decode is left out (told to the segment's notice)."""
    where = Where()
    if question.since_us is not None:
        where.add("last_us >= ?", question.since_us)
    if question.until_us is not None:
        where.add("first_us <= ?", question.until_us)
    add_journaled_filters(where, question, "written_us")
    if question.levels:
        where.members("levels", sorted(question.levels))
    if question.modules:
        where.members("modules", sorted(question.modules))
    if question.codes:
        where.members("codes", sorted(question.codes))
    if question.pid is not None:
        where.members("pids", [str(question.pid)])
    if question.host is not None:
        where.add("host = ?", question.host)
    if question.device is not None:
        # Host logs carry the device in the body, not the path: those blocks must be read.
        where.add("(device = ? OR device IS NULL)", question.device)
    if triggers is not None:
        where.any_of("file_key", sorted({key for key, _ in triggers}))
    search = None if question.pattern is None else BlockSearch.of(question.pattern)
    blocks = _blocks(segment, where, after[0] - 1)
    with ThreadPoolExecutor(1, thread_name_prefix="npuwatch-unpack") as unpacking:
        for block, unpacked in _unpacked_ahead(blocks, unpacking, search):
            try:
                prepared = unpacked.result()
                if isinstance(prepared, OpenedFrames):
                    matching = frames_matching(prepared, search)
                    for problem in prepared.damage:  # a damaged frame costs its records only
                        segment.damaged(f"block {block.id}, {problem}")
                else:
                    matching = decode_matching(prepared, search)
            except BlockFormatError as error:
                segment.damaged(f"block {block.id}: {error}")
                continue
            for position, record in matching:
                if (block.id, position) <= after:
                    continue
                if _matches(record, question, block.source, triggers):
                    device = block.source.device
                    if question.device is not None and device is None:
                        device = _body_device(record, block.source)
                        if device != question.device:
                            continue
                    yield Hit(segment.sequence, block.id, position, block.source, record, device)


def _blocks(segment: ReadOnlySegment, where: Where, after: int) -> Iterator[StoredBlock]:
    """The blocks after id `after` that `where` lets through, a page at a time (memory stays
    bounded on a large journal), read around damage. NOT INDEXED: read by id, so that a
    damaged index cannot hide blocks."""
    rows = segment.rows_after(
        f"SELECT {BLOCK_COLUMNS} FROM blocks NOT INDEXED WHERE id >= ? AND {where.sql()} "
        "ORDER BY id LIMIT ?",
        where.parameters,
        after=after,
        page=16,
    )
    return map(block_from_row, rows)


def _unpacked_ahead(
    blocks: Iterator[StoredBlock], unpacking: ThreadPoolExecutor, search: BlockSearch | None
) -> Iterator[tuple[StoredBlock, Future[bytes | OpenedFrames]]]:
    """Each block with its unpacking (the frames that may hold a match, in format 3), started
    _UNPACKED_AHEAD blocks before it is wanted."""
    pending: deque[tuple[StoredBlock, Future[bytes | OpenedFrames]]] = deque()
    for block in blocks:
        pending.append((block, unpacking.submit(unpack_for, block.payload, search)))
        if len(pending) > _UNPACKED_AHEAD:
            yield pending.popleft()
    yield from pending


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
    if question.codes and question.codes.isdisjoint(record.error_codes):
        return False
    return triggers is None or (source.file_key, record.offset or 0) in triggers


def _body_device(record: StoredRecord, source: FileSource) -> int | None:
    from npuwatch.journal.documents import to_record  # noqa: PLC0415 - the parser, only if needed

    return to_record(record, source).device
