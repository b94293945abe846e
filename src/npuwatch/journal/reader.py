"""Reading the journal in order from a position, a page at a time, across segments.

Sinks and `npuwatch correlate --journal` read through this. Memory stays bounded however large
the backlog: a page is a few blocks, and a segment is opened only while it is being read.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from npuwatch.handoff import StateRow
from npuwatch.journal.block import BlockFormatError, read_columns
from npuwatch.journal.damage import DamageNotice, is_damage
from npuwatch.journal.event_context import EventContexts, is_document
from npuwatch.journal.segment import Segment, StoredBlock
from npuwatch.journal.store import list_segments

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Position:
    """A place in the journal: after row `row` of segment `segment` (0, 0 is the beginning)."""

    segment: int = 0
    row: int = 0


class JournalReader:
    """Pages through the blocks (or the events) of a journal directory, around damage.

    A segment that cannot be opened is left out; a damaged part of one is stepped over
    (journal/damage.py); a block that does not decode, an event or state whose document is not
    a JSON object, is left out alone, so that a sink is never handed what it cannot read. Each
    damaged segment is told once to `notice` (by default, a warning in the log)."""

    def __init__(
        self, directory: Path, readonly: bool = True, notice: DamageNotice | None = None
    ) -> None:
        self.directory = directory
        self._readonly = readonly
        self._open: dict[int, Segment] = {}
        self._unreadable: set[int] = set()
        """Segments that could not be opened and are not the newest: not tried again."""
        self._contexts: EventContexts | None = None
        self.damage = notice if notice is not None else DamageNotice(log.warning)

    @property
    def skipped_segments(self) -> int:
        """Segments found damaged, whole or in part (each is left where it is)."""
        return len(self.damage.segments)

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

    def _segment(self, sequence: int, path: Path, newest: bool) -> Segment | None:
        segment = self._open.get(sequence)
        if segment is not None or sequence in self._unreadable:
            return segment
        try:
            segment = Segment(
                path,
                sequence,
                readonly=self._readonly,
                damaged=partial(self.damage.damaged, path),
                being_made=newest,
            )
        except FileNotFoundError:  # removed by retention since the folder was listed
            return None
        except sqlite3.DatabaseError as error:
            if not is_damage(error):
                raise
            self.damage.unreadable(path, error)
            if not newest:  # the newest may be one the agent is making: looked at again
                self._unreadable.add(sequence)
            return None
        self._open[sequence] = segment
        return segment

    def _release_before(self, sequence: int) -> None:
        for old in [s for s in self._open if s < sequence]:
            self._open.pop(old).close()

    def blocks_after(
        self, position: Position, limit: int = 16
    ) -> list[tuple[Position, StoredBlock]]:
        """Up to `limit` blocks after `position`, each with the position just past it."""
        found = self._page_after(position, lambda s, start: self._blocks(s, start, limit))
        if found is None:
            return []
        sequence, blocks = found
        return [(Position(sequence, block.id), block) for block in blocks]

    def _blocks(self, segment: Segment, start: int, limit: int) -> list[StoredBlock]:
        """The next blocks of `segment` that decode (a sink decodes every one it is given).
        Checking costs decoding the columns twice: 0.2 µs a record, 1 % of shipping one."""
        while page := segment.blocks_after(start, limit):
            readable = []
            for block in page:
                try:
                    read_columns(block.payload)
                except BlockFormatError as error:
                    self.damage.damaged(segment.path, f"block {block.id}: {error}")
                    continue
                readable.append(block)
            if readable:
                return readable
            start = page[-1].id
        return []

    def events_after(self, position: Position, limit: int = 256) -> list[tuple[Position, str]]:
        """Up to `limit` events (as JSON documents) after `position`."""
        return [(at, document) for at, _, document in self.event_rows_after(position, limit)]

    def event_rows_after(
        self, position: Position, limit: int = 256
    ) -> list[tuple[Position, str, str]]:
        """Up to `limit` events after `position`: (position, event id, JSON document, its
        context read back from the blocks: journal/event_context.py)."""
        found = self._page_after(position, lambda s, start: self._events(s, start, limit))
        if found is None:
            return []
        sequence, events = found
        return [(Position(sequence, seq), id_, document) for seq, id_, document in events]

    def _events(self, segment: Segment, start: int, limit: int) -> list[tuple[int, str, str]]:
        """The next events of `segment` whose documents are JSON objects, context put back."""
        if self._contexts is None:
            self._contexts = EventContexts(self.directory, notice=self.damage)
        self._contexts.release_before(segment.sequence)
        while page := segment.events_after(start, limit):
            documents = self._contexts.complete_all(segment.sequence, [doc for _, _, doc in page])
            readable = []
            for (seq, id_, _), document in zip(page, documents, strict=True):
                if is_document(document):
                    readable.append((seq, id_, document))
                else:
                    self.damage.damaged(segment.path, f"event {seq} is not a JSON document")
            if readable:
                return readable
            start = page[-1][0]
        return []

    def states_after(self, position: Position, limit: int = 256) -> list[tuple[Position, StateRow]]:
        """Up to `limit` states written after `position`, in the order they were written."""
        found = self._page_after(position, lambda s, start: self._states(s, start, limit))
        if found is None:
            return []
        sequence, states = found
        return [(Position(sequence, seq), row) for seq, row in states]

    def _states(self, segment: Segment, start: int, limit: int) -> list[tuple[int, StateRow]]:
        """The next states of `segment` whose documents are JSON objects."""
        while page := segment.states_after(start, limit):
            readable = [(seq, row) for seq, row in page if self._state_reads(segment, row)]
            if readable:
                return readable
            start = page[-1][0]
        return []

    def _state_reads(self, segment: Segment, row: StateRow) -> bool:
        if is_document(row.document):
            return True
        self.damage.damaged(segment.path, f"state {row.id!r} is not a JSON document")
        return False

    def _page_after(
        self, position: Position, fetch: Callable[[Segment, int], list[T]]
    ) -> tuple[int, list[T]] | None:
        """The first non-empty page `fetch` gives after `position`, and its segment: what
        cannot be read is left out (told once to the notice)."""
        segments = list_segments(self.directory)
        for sequence, path in segments:
            if sequence < position.segment:
                continue
            segment = self._segment(sequence, path, newest=sequence == segments[-1][0])
            if segment is None:
                continue
            start = position.row if sequence == position.segment else 0
            page = fetch(segment, start)
            if page:
                self._release_before(sequence)
                return sequence, page
        return None

    def end(self) -> tuple[Position, Position, Position]:
        """The positions after the last block, the last event and the last state."""
        segments = list_segments(self.directory)
        for sequence, path in reversed(segments):
            segment = self._segment(sequence, path, newest=sequence == segments[-1][0])
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
                segment = self._segment(sequence, path, newest=sequence == segments[-1][0])
                if segment is None:
                    continue
                found = segment.state(id_)
                if found is not None and self._state_reads(segment, found):
                    return found
            return None
        finally:
            if segments:
                self._release_before(segments[-1][0])

    def latest_states(self) -> dict[str, StateRow]:
        """The newest row of every state the journal holds, by id (read from the newest
        segment back: what an agent takes up at its start)."""
        latest: dict[str, StateRow] = {}
        segments = list_segments(self.directory)
        for sequence, path in reversed(segments):
            segment = self._segment(sequence, path, newest=sequence == segments[-1][0])
            if segment is None:
                continue
            in_segment: dict[str, StateRow] = {}
            seq = 0
            while page := self._states(segment, seq, 1024):
                in_segment.update((row.id, row) for _, row in page)  # a later row replaces
                seq = page[-1][0]
            for id_, row in in_segment.items():
                latest.setdefault(id_, row)  # a newer segment's row stays
        return latest
