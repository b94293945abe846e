"""The records around a match, from the same file, across block boundaries (`grep -C`)."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from pathlib import Path

from npuwatch.journal.block import decode_block
from npuwatch.journal.layout import segment_file_name, segment_files
from npuwatch.journal.query import Directory, Hit
from npuwatch.journal.rows import StoredRecord
from npuwatch.journal.segment import BLOCK_COLUMNS, Segment, block_from_row

_CACHED_BLOCKS = 8
_SEGMENTS_AWAY = 3
"""How many segments away the neighbours of a hit are looked for: a file quiet for longer than
that many segments took has no context worth printing there."""


class ContextReader:
    """Reads the neighbours of hits; keeps the last few blocks decoded."""

    def __init__(self, directory: Directory) -> None:
        self.directory = directory
        self._segments: dict[int, Segment] = {}
        self._sequences: list[int] | None = None
        self._blocks: OrderedDict[tuple[int, int], tuple[str, list[StoredRecord]]] = OrderedDict()

    def close(self) -> None:
        for segment in self._segments.values():
            segment.close()
        self._segments.clear()

    def around(
        self, hit: Hit, before: int, after: int
    ) -> tuple[list[StoredRecord], list[StoredRecord]]:
        """Up to `before` records before the hit and `after` records after it."""
        file_key, records = self._block(hit.segment, hit.block_id)
        earlier = records[max(hit.position - before, 0) : hit.position]
        later = records[hit.position + 1 : hit.position + 1 + after]
        where = (hit.segment, hit.block_id)
        while len(earlier) < before:
            found = self._neighbour(where, file_key, "<")
            if found is None:
                break
            where, more = found
            earlier = more[max(len(more) - (before - len(earlier)), 0) :] + earlier
        where = (hit.segment, hit.block_id)
        while len(later) < after:
            found = self._neighbour(where, file_key, ">")
            if found is None:
                break
            where, more = found
            later = later + more[: after - len(later)]
        return earlier, later

    def record(self, hit: Hit) -> StoredRecord:
        """The hit's record as its block holds it (a hit from the index has fewer fields)."""
        return self._block(hit.segment, hit.block_id)[1][hit.position]

    def _segment(self, sequence: int) -> Segment:
        segment = self._segments.get(sequence)
        if segment is None:
            path = Path(self.directory, segment_file_name(sequence))
            segment = self._segments[sequence] = Segment(path, sequence, readonly=True)
        return segment

    def _block(self, sequence: int, block_id: int) -> tuple[str, list[StoredRecord]]:
        key = (sequence, block_id)
        cached = self._blocks.get(key)
        if cached is not None:
            self._blocks.move_to_end(key)
            return cached
        rows = self._segment(sequence).query(
            f"SELECT {BLOCK_COLUMNS} FROM blocks WHERE id = ?", [block_id]
        )
        block = block_from_row(rows[0])
        value = (block.source.file_key, decode_block(block.payload))
        self._blocks[key] = value
        if len(self._blocks) > _CACHED_BLOCKS:
            self._blocks.popitem(last=False)
        return value

    def _neighbour(
        self, where: tuple[int, int], file_key: str, direction: str
    ) -> tuple[tuple[int, int], list[StoredRecord]] | None:
        """The block of the same file next to `where` (segment, block id) in `direction`: in the
        same segment, or in the nearest segment before or after it that has one (a file's
        records continue in the next segment when the journal rolls)."""
        sequence, block_id = where
        found = self._neighbour_in(sequence, file_key, block_id, direction)
        if found is not None:
            return (sequence, found), self._block(sequence, found)[1]
        for other in self._segments_from(sequence, direction):
            edge = -1 if direction == ">" else 1 << 62
            found = self._neighbour_in(other, file_key, edge, direction)
            if found is not None:
                return (other, found), self._block(other, found)[1]
        return None

    def _segments_from(self, sequence: int, direction: str) -> list[int]:
        """The segments after (or before) `sequence`, nearest first, at most _SEGMENTS_AWAY."""
        if self._sequences is None:
            self._sequences = [number for number, _ in segment_files(self.directory)]
        if direction == ">":
            return [n for n in self._sequences if n > sequence][:_SEGMENTS_AWAY]
        return [n for n in reversed(self._sequences) if n < sequence][:_SEGMENTS_AWAY]

    def _neighbour_in(
        self, sequence: int, file_key: str, block_id: int, direction: str
    ) -> int | None:
        order = "DESC" if direction == "<" else "ASC"
        try:
            rows = self._segment(sequence).query(
                f"SELECT id FROM blocks WHERE file_key = ? AND id {direction} ? "
                f"ORDER BY id {order} LIMIT 1",
                [file_key, block_id],
            )
        except sqlite3.Error:  # removed by retention meanwhile, or quarantined: no context there
            return None
        return int(rows[0][0]) if rows else None
