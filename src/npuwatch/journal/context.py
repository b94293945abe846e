"""The records around a match, from the same file, across block boundaries (`grep -C`)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from npuwatch.journal.block import decode_block
from npuwatch.journal.layout import segment_file_name
from npuwatch.journal.query import Directory, Hit
from npuwatch.journal.rows import StoredRecord
from npuwatch.journal.segment import BLOCK_COLUMNS, Segment, block_from_row

_CACHED_BLOCKS = 8


class ContextReader:
    """Reads the neighbours of hits; keeps the last few blocks decoded."""

    def __init__(self, directory: Directory) -> None:
        self.directory = directory
        self._segments: dict[int, Segment] = {}
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
        block_id = hit.block_id
        while len(earlier) < before:
            found = self._neighbour(hit.segment, file_key, block_id, "<")
            if found is None:
                break
            block_id, more = found
            earlier = more[max(len(more) - (before - len(earlier)), 0) :] + earlier
        block_id = hit.block_id
        while len(later) < after:
            found = self._neighbour(hit.segment, file_key, block_id, ">")
            if found is None:
                break
            block_id, more = found
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
        self, sequence: int, file_key: str, block_id: int, direction: str
    ) -> tuple[int, list[StoredRecord]] | None:
        order = "DESC" if direction == "<" else "ASC"
        rows = self._segment(sequence).query(
            f"SELECT id FROM blocks WHERE file_key = ? AND id {direction} ? "
            f"ORDER BY id {order} LIMIT 1",
            [file_key, block_id],
        )
        if not rows:
            return None
        neighbour = int(rows[0][0])
        return neighbour, self._block(sequence, neighbour)[1]
