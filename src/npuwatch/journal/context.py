"""The records around a match, from the same file, across block boundaries (`grep -C`, and the
context of an event the journal keeps as a span of offsets: journal/event_context.py)."""

from __future__ import annotations

import logging
import sqlite3
from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple
from zlib import crc32

from npuwatch.journal.block import BlockColumns, BlockFormatError, read_columns
from npuwatch.journal.damage import DamageNotice, is_damage
from npuwatch.journal.layout import segment_file_name, segment_files
from npuwatch.journal.question import Directory, Hit
from npuwatch.journal.rows import StoredRecord
from npuwatch.journal.segment import BLOCK_COLUMNS, Segment, block_from_row

_CACHED_BLOCKS = 8
"""Blocks kept decoded (their columns and text, a few MiB each; records are built on demand)."""
SEGMENTS_AWAY = 3
"""How many segments away the neighbours of a hit are looked for: a file quiet for longer than
that many segments took has no context worth printing there."""


Place = tuple[int, int, int]
"""A record in the journal: segment sequence, block id, position in the block."""

log = logging.getLogger(__name__)


class ContextReader:
    """Reads the neighbours of hits; keeps the last few blocks decoded.

    A block that cannot be read (its segment damaged or gone) ends the context there: the
    records beyond it are not given, and the damage is told once per segment to `notice`."""

    def __init__(
        self,
        directory: Directory,
        cached_blocks: int = _CACHED_BLOCKS,
        notice: DamageNotice | None = None,
    ) -> None:
        self.directory = directory
        self._cached_blocks = cached_blocks
        self.damage = notice if notice is not None else DamageNotice(log.warning)
        self._segments: dict[int, Segment] = {}
        self._sequences: list[int] | None = None
        self._blocks: OrderedDict[tuple[int, int], tuple[str, BlockColumns]] = OrderedDict()
        self._block_spans: dict[tuple[int, str], list[tuple[int, int, int, int]]] = {}

    def close(self) -> None:
        for segment in self._segments.values():
            segment.close()
        self._segments.clear()

    def around(
        self, hit: Hit, before: int, after: int
    ) -> tuple[list[StoredRecord], list[StoredRecord]]:
        """Up to `before` records before the hit and `after` records after it."""
        place = (hit.segment, hit.block_id, hit.position)
        earlier, later = self.runs_around(place, before, after)
        return _records(earlier), _records(later)

    def runs_around(self, place: Place, before: int, after: int) -> tuple[list[Run], list[Run]]:
        """Up to `before` records before `place` and `after` after it, as runs of consecutive
        records in a block: the caller builds what it needs (records, or only their text).
        None at all when the block of `place` cannot be read."""
        sequence, block_id, position = place
        found = self._block(sequence, block_id)
        if found is None:
            return [], []
        file_key, columns = found
        earlier = [Run(columns, max(position - before, 0), position)]
        later = [Run(columns, position + 1, min(position + 1 + after, columns.count))]
        missing = before - len(earlier[0])
        where = (sequence, block_id)
        while missing > 0 and (near := self._neighbour(where, file_key, "<")) is not None:
            where, more = near
            run = Run(more, max(more.count - missing, 0), more.count)
            earlier.insert(0, run)
            missing -= len(run)
        missing = after - len(later[0])
        where = (sequence, block_id)
        while missing > 0 and (near := self._neighbour(where, file_key, ">")) is not None:
            where, more = near
            run = Run(more, 0, min(missing, more.count))
            later.append(run)
            missing -= len(run)
        return earlier, later

    def record(self, hit: Hit) -> StoredRecord:
        """The hit's record as its block holds it (a hit from the index has fewer fields: they
        are what is given when the block cannot be read)."""
        found = self._block(hit.segment, hit.block_id)
        return hit.record if found is None else found[1].record(hit.position)

    def locate(
        self, sequence: int, file_key: str, offset: int, text_check: int | None = None
    ) -> Place | None:
        """The newest record of `file_key` that starts at `offset` (and whose text has the
        CRC-32 `text_check`, when given), in segment `sequence` or the few before it (an event
        is journaled after its trigger, perhaps in a later segment)."""
        for other in [sequence, *self._segments_from(sequence, "<")]:
            spans = self._spans(other, file_key)
            # The blocks whose offsets cover `offset`, newest first; then those in which the
            # file was truncated and written again (the offsets start over inside them): their
            # offsets span less than their text, or end before they start.
            likely = [block_id for block_id, first, end, _ in spans if first <= offset < end]
            truncated = [
                block_id
                for block_id, first, end, text_bytes in spans
                if end - first < text_bytes and block_id not in likely
            ]
            for block_id in likely + truncated:
                found = self._block(other, block_id)
                if found is None:
                    continue
                columns = found[1]
                for position in columns.positions_of(offset):
                    if text_check is None or text_crc(columns.original(position)) == text_check:
                        return other, block_id, position
        return None

    def forget_spans(self) -> None:
        """Blocks were written since the spans were read (a reader of a journal in use)."""
        self._block_spans.clear()

    def _spans(self, sequence: int, file_key: str) -> list[tuple[int, int, int, int]]:
        """(block id, first offset, end offset, bytes of text) of the blocks of `file_key` in a
        segment, the newest first; read once (until `forget_spans`), not once per record."""
        key = (sequence, file_key)
        spans = self._block_spans.get(key)
        if spans is None:
            rows = self._query(
                sequence,
                "SELECT id, first_offset, end_offset, raw_bytes FROM blocks WHERE file_key = ? "
                "AND first_offset IS NOT NULL AND end_offset IS NOT NULL ORDER BY id DESC",
                [file_key],
            )
            try:
                spans = [(int(i), int(f), int(e), int(b)) for i, f, e, b in rows or ()]
            except (TypeError, ValueError) as error:  # damage SQLite did not see
                self._damaged(sequence, error)
                spans = []
            self._block_spans[key] = spans
        return spans

    def release_before(self, sequence: int) -> None:
        """Close the segments older than `sequence` (retention may delete them; an open handle
        would keep their space from being freed)."""
        for old in [number for number in self._segments if number < sequence]:
            self._segments.pop(old).close()
        for key in [key for key in self._blocks if key[0] < sequence]:
            del self._blocks[key]
        self._block_spans.clear()

    def _segment(self, sequence: int) -> Segment | None:
        """Segment `sequence`, open; None when it is gone (removed by retention meanwhile, or
        set aside) or cannot be opened (told to the notice)."""
        segment = self._segments.get(sequence)
        if segment is None:
            path = Path(self.directory, segment_file_name(sequence))
            try:
                segment = Segment(
                    path, sequence, readonly=True, damaged=partial(self.damage.damaged, path)
                )
            except FileNotFoundError:
                return None
            except sqlite3.DatabaseError as error:
                if not is_damage(error):
                    raise
                self.damage.unreadable(path, error)
                return None
            self._segments[sequence] = segment
        return segment

    def _query(
        self, sequence: int, sql: str, parameters: list[object]
    ) -> list[tuple[Any, ...]] | None:
        """The rows of `sql` in segment `sequence`; None when they cannot be read."""
        segment = self._segment(sequence)
        if segment is None:
            return None
        try:
            return segment.query(sql, parameters)
        except sqlite3.DatabaseError as error:
            if is_damage(error) and "no such table" not in str(error):
                self._damaged(sequence, error)
            elif not is_damage(error):
                raise
            return None

    def _damaged(self, sequence: int, problem: object) -> None:
        self.damage.damaged(Path(self.directory, segment_file_name(sequence)), problem)

    def _block(self, sequence: int, block_id: int) -> tuple[str, BlockColumns] | None:
        """The file key and the decoded columns of a block; None when it cannot be read."""
        key = (sequence, block_id)
        cached = self._blocks.get(key)
        if cached is not None:
            self._blocks.move_to_end(key)
            return cached
        rows = self._query(sequence, f"SELECT {BLOCK_COLUMNS} FROM blocks WHERE id = ?", [block_id])
        if not rows:
            return None
        try:
            block = block_from_row(rows[0])
            value = (block.source.file_key, read_columns(block.payload))
        except (BlockFormatError, ValueError, TypeError) as error:
            self._damaged(sequence, f"block {block_id}: {error}")
            return None
        self._blocks[key] = value
        if len(self._blocks) > self._cached_blocks:
            self._blocks.popitem(last=False)
        return value

    def _neighbour(
        self, where: tuple[int, int], file_key: str, direction: str
    ) -> tuple[tuple[int, int], BlockColumns] | None:
        """The block of the same file next to `where` (segment, block id) in `direction`: in the
        same segment, or in the nearest segment before or after it that has one (a file's
        records continue in the next segment when the journal rolls)."""
        sequence, block_id = where
        found = self._neighbour_in(sequence, file_key, block_id, direction)
        if found is not None:
            block = self._block(sequence, found)
            return None if block is None else ((sequence, found), block[1])
        for other in self._segments_from(sequence, direction):
            edge = -1 if direction == ">" else 1 << 62
            found = self._neighbour_in(other, file_key, edge, direction)
            if found is not None:
                block = self._block(other, found)
                return None if block is None else ((other, found), block[1])
        return None

    def _segments_from(self, sequence: int, direction: str) -> list[int]:
        """The segments after (or before) `sequence`, nearest first, at most SEGMENTS_AWAY."""
        known = self._sequences
        if known is None or sequence not in known or (direction == ">" and sequence == known[-1]):
            # listed again past the newest segment: a long-lived reader sees the journal roll
            known = self._sequences = [number for number, _ in segment_files(self.directory)]
        if direction == ">":
            return [n for n in known if n > sequence][:SEGMENTS_AWAY]
        return [n for n in reversed(known) if n < sequence][:SEGMENTS_AWAY]

    def _neighbour_in(
        self, sequence: int, file_key: str, block_id: int, direction: str
    ) -> int | None:
        order = "DESC" if direction == "<" else "ASC"
        rows = self._query(
            sequence,
            f"SELECT id FROM blocks WHERE file_key = ? AND id {direction} ? "
            f"ORDER BY id {order} LIMIT 1",
            [file_key, block_id],
        )
        return int(rows[0][0]) if rows else None


def text_crc(text: str) -> int:
    """A record's text's CRC-32: how a reference to a record makes sure it finds that one."""
    return crc32(text.encode("utf-8", "surrogatepass"))


class Run(NamedTuple):
    """Records `start` to `stop` (not included) of a block."""

    block: BlockColumns
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start

    def originals(self) -> list[str]:
        return self.block.originals(self.start, self.stop)


def _records(runs: list[Run]) -> list[StoredRecord]:
    return [run.block.record(index) for run in runs for index in range(run.start, run.stop)]
