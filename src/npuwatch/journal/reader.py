"""Reading the journal in order from a position, a page at a time, across segments.

Sinks and `npuwatch grep` read through this. Memory stays bounded however large the backlog:
a page is a few blocks, and a segment is opened only while it is being read.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from npuwatch.journal.event_context import EventContexts
from npuwatch.journal.segment import Segment, StateRow, StoredBlock
from npuwatch.journal.store import list_segments

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Position:
    """A place in the journal: after row `row` of segment `segment` (0, 0 is the beginning)."""

    segment: int = 0
    row: int = 0


class JournalReader:
    """Pages through the blocks (or the events) of a journal directory."""

    def __init__(self, directory: Path, readonly: bool = True) -> None:
        self.directory = directory
        self._readonly = readonly
        self._open: dict[int, Segment] = {}
        self._unreadable: set[int] = set()
        self._contexts: EventContexts | None = None
        self.skipped_segments = 0
        """Segments that could not be read (they are left for the agent to quarantine)."""

    def close(self) -> None:
        for segment in self._open.values():
            segment.close()
        self._open.clear()
        if self._contexts is not None:
            self._contexts.close()
            self._contexts = None

    def __enter__(self) -> JournalReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _segment(self, sequence: int, path: Path) -> Segment | None:
        segment = self._open.get(sequence)
        if segment is None:
            try:
                segment = Segment(path, sequence, readonly=self._readonly)
            except sqlite3.DatabaseError as error:
                self._skip(sequence, path, error)
                return None
            try:
                segment.last_block_id()  # fails now, not later, on a file that is not a journal
            except sqlite3.DatabaseError as error:
                segment.close()
                self._skip(sequence, path, error)
                return None
            self._open[sequence] = segment
        return segment

    def _skip(self, sequence: int, path: Path, error: sqlite3.DatabaseError) -> None:
        # Once per segment: a reader polling at the end of the journal passes it every time.
        if sequence not in self._unreadable:
            self._unreadable.add(sequence)
            log.warning("cannot read journal segment %s: %s", path, error)
            self.skipped_segments += 1

    def _release_before(self, sequence: int) -> None:
        for old in [s for s in self._open if s < sequence]:
            self._open.pop(old).close()

    def blocks_after(
        self, position: Position, limit: int = 16
    ) -> list[tuple[Position, StoredBlock]]:
        """Up to `limit` blocks after `position`, each with the position just past it."""
        found = self._page_after(position, lambda s, start: s.blocks_after(start, limit))
        if found is None:
            return []
        sequence, blocks = found
        return [(Position(sequence, block.id), block) for block in blocks]

    def events_after(self, position: Position, limit: int = 256) -> list[tuple[Position, str]]:
        """Up to `limit` events (as JSON documents) after `position`."""
        return [(at, document) for at, _, document in self.event_rows_after(position, limit)]

    def event_rows_after(
        self, position: Position, limit: int = 256
    ) -> list[tuple[Position, str, str]]:
        """Up to `limit` events after `position`: (position, event id, JSON document, its
        context read back from the blocks: journal/event_context.py)."""
        found = self._page_after(position, lambda s, start: s.events_after(start, limit))
        if found is None:
            return []
        sequence, events = found
        if self._contexts is None:
            self._contexts = EventContexts(self.directory)
        self._contexts.release_before(sequence)
        documents = self._contexts.complete_all(sequence, [doc for _, _, doc in events])
        return [
            (Position(sequence, seq), id_, document)
            for (seq, id_, _), document in zip(events, documents, strict=True)
        ]

    def states_after(self, position: Position, limit: int = 256) -> list[tuple[Position, StateRow]]:
        """Up to `limit` states written after `position`, in the order they were written."""
        found = self._page_after(position, lambda s, start: s.states_after(start, limit))
        if found is None:
            return []
        sequence, states = found
        return [(Position(sequence, seq), row) for seq, row in states]

    def _page_after(
        self, position: Position, fetch: Callable[[Segment, int], list[T]]
    ) -> tuple[int, list[T]] | None:
        """The first non-empty page `fetch` gives after `position`, and its segment: segments
        that cannot be read are skipped (once each, with a warning)."""
        for sequence, path in list_segments(self.directory):
            if sequence < position.segment:
                continue
            segment = self._segment(sequence, path)
            if segment is None:
                continue
            start = position.row if sequence == position.segment else 0
            try:
                page = fetch(segment, start)
            except sqlite3.DatabaseError as error:
                self._skip(sequence, path, error)
                continue
            if page:
                self._release_before(sequence)
                return sequence, page
        return None

    def end(self) -> tuple[Position, Position, Position]:
        """The positions after the last block, the last event and the last state."""
        for sequence, path in reversed(list_segments(self.directory)):
            segment = self._segment(sequence, path)
            if segment is None:
                continue
            self._release_before(sequence)  # only the newest readable segment stays open
            return (
                Position(sequence, segment.last_block_id()),
                Position(sequence, segment.last_event_seq()),
                Position(sequence, segment.last_state_seq()),
            )
        return Position(), Position(), Position()

    def state(self, id_: str) -> StateRow | None:
        """The newest row of one state, from the newest segment that has it (the older
        segments it opened on the way are closed again)."""
        segments = list_segments(self.directory)
        try:
            for sequence, path in reversed(segments):
                segment = self._segment(sequence, path)
                if segment is None:
                    continue
                try:
                    found = segment.state(id_)
                except sqlite3.DatabaseError as error:
                    self._skip(sequence, path, error)
                    continue
                if found is not None:
                    return found
            return None
        finally:
            if segments:
                self._release_before(segments[-1][0])

    def latest_states(self) -> dict[str, StateRow]:
        """The newest row of every state the journal holds, by id (read from the newest
        segment back: what an agent takes up at its start)."""
        latest: dict[str, StateRow] = {}
        for sequence, path in reversed(list_segments(self.directory)):
            segment = self._segment(sequence, path)
            if segment is None:
                continue
            in_segment: dict[str, StateRow] = {}
            seq = 0
            while page := segment.states_after(seq, 1024):
                in_segment.update((row.id, row) for _, row in page)  # a later row replaces
                seq = page[-1][0]
            for id_, row in in_segment.items():
                latest.setdefault(id_, row)  # a newer segment's row stays
        return latest
