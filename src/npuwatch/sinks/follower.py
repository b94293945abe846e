"""The journal follower: runs any sink from its own thread, with a cursor of its own.

It reads the page after the sink's cursor, hands it to the sink, and moves the cursor past it
once the sink returns; between pages it waits for the journal's next commit. A delivery that
must be tried again pauses here, for a growing, jittered time that a stop cuts short. The cursor
is saved every `save_interval_s` and at the stop; a full disk stops nothing (the cursors wait in
memory, see journal.state_file), and a restart before the save repeats what was delivered since,
which the sinks make harmless (deterministic ids, or a line printed twice). Nothing is skipped
but what a damaged segment does not let be read: the reader steps over it, says so once, and
hands the sink only what decodes (journal/reader.py), so that a damaged journal neither stops
shipping nor makes it loop on the same page.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from npuwatch.journal.cursors import Cursor, CursorStore
from npuwatch.journal.damage import DamageNotice, is_damage
from npuwatch.journal.reader import JournalReader
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.sink import Page, Sink, StopDelivery

log = logging.getLogger(__name__)


class Backoff:
    """The pauses of one delivery (a Pause): from the first, doubling up to the longest, each
    jittered; a stop ends the one under way with StopDelivery."""

    def __init__(
        self,
        stop: threading.Event,
        first_s: float,
        max_s: float,
        waiting: Callable[[], None] = lambda: None,
    ) -> None:
        self._stop = stop
        self._next_s = first_s
        self._max_s = max_s
        self._waiting = waiting

    def __call__(self, announce: Callable[[float], None] | None = None) -> None:
        self._waiting()
        delay = self._next_s * random.uniform(0.5, 1.0)
        if announce is not None:
            announce(delay)
        if self._stop.wait(delay):
            raise StopDelivery
        self._next_s = min(self._next_s * 2, self._max_s)


class JournalFollower:
    """Delivers the journal's entries to one sink, from its cursor on, until stopped."""

    def __init__(
        self,
        sink: Sink,
        journal_directory: Path,
        cursors: CursorStore,
        committed: threading.Condition,
        stop: threading.Event,
        metrics: SelfMetrics | None = None,
        save_interval_s: float = 1.0,
        wall: Callable[[], float] = time.time,
        notice: DamageNotice | None = None,
    ) -> None:
        """`notice`: where a damaged segment is named (one for all the followers of an agent,
        so that each segment is named once)."""
        self.sink = sink
        self._reader = JournalReader(journal_directory, notice=notice)
        self._cursors = cursors
        self._committed = committed
        self._stop = stop
        self._metrics = metrics
        self._save_interval_s = save_interval_s
        self._wall = wall
        self._caught_up_at = wall()
        self.cursor = self._first_cursor()
        self.thread = threading.Thread(target=self._run, name=f"npuwatch-{sink.name}", daemon=True)

    def _first_cursor(self) -> Cursor:
        saved = self._cursors.get(self.sink.name)
        blocks, events, states = self._reader.end()
        if (
            saved is not None
            and saved.blocks <= blocks
            and saved.events <= events
            and saved.states <= states
        ):
            return saved
        if saved is not None:
            # The journal was deleted and started again: the cursor points past its end, where
            # nothing would ever be delivered.
            log.warning(
                "%s: the journal is newer than the cursor saved in %s; starting %s",
                self.sink.name,
                self._cursors.path,
                "at its end" if self.sink.traits.from_the_end else "at its beginning",
            )
        cursor = Cursor(blocks, events, states) if self.sink.traits.from_the_end else Cursor()
        self._cursors.set(self.sink.name, cursor)
        return cursor

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        """Close the journal reader of a follower pumped by hand (the thread closes its own)."""
        self._reader.close()

    def pump(self) -> bool:
        """Deliver one page of blocks and one of events after the cursor; True when there was
        anything to deliver. Raises StopDelivery when the agent stops during a delivery."""
        traits = self.sink.traits
        moved = False
        if traits.reads_blocks:
            blocks = self._reader.blocks_after(self.cursor.blocks, traits.blocks_per_page)
            if blocks:
                self.sink.deliver(Page(blocks=blocks), self._pause())
                self.cursor = replace(self.cursor, blocks=blocks[-1][0])
                moved = True
        events = self._reader.event_rows_after(self.cursor.events, traits.events_per_page)
        if events:
            self.sink.deliver(Page(events=events), self._pause())
            self.cursor = replace(self.cursor, events=events[-1][0])
            moved = True
        if traits.reads_states:
            states = self._reader.states_after(self.cursor.states, traits.events_per_page)
            if states:
                self.sink.deliver(Page(states=states), self._pause())
                self.cursor = replace(self.cursor, states=states[-1][0])
                moved = True
        if not moved:
            self._caught_up_at = self._wall()
        self._show_backlog()
        return moved

    def _pause(self) -> Backoff:
        traits = self.sink.traits
        return Backoff(self._stop, traits.first_pause_s, traits.max_pause_s, self._show_backlog)

    def _show_backlog(self) -> None:
        if self._metrics is not None:
            backlog = self._wall() - self._caught_up_at
            self._metrics.ship_backlog.labels(self.sink.name).set(backlog)

    def _run(self) -> None:
        last_save = time.monotonic()
        drains = self.sink.traits.drains_at_stop
        try:
            while True:
                stopping = self._stop.is_set()
                if stopping and not drains:
                    return  # the backlog waits in the journal
                try:
                    moved = self.pump()
                except StopDelivery:
                    return
                except sqlite3.DatabaseError as error:
                    if is_damage(error):  # the reader reads around damage: a bug if it is here
                        log.exception("%s sink failed", self.sink.name)
                        raise
                    # The journal busy for a moment (a lock): the page is read again later.
                    log.debug("%s: the journal cannot be read now (%s)", self.sink.name, error)
                    moved = False
                except Exception:  # a bug: the thread dies, the agent notices and exits
                    log.exception("%s sink failed", self.sink.name)
                    raise
                if time.monotonic() - last_save >= self._save_interval_s:
                    self._save()
                    last_save = time.monotonic()
                if stopping and not moved:
                    return
                if not moved:
                    with self._committed:
                        self._committed.wait(0.5)
        finally:
            if not self._save(at_once=True):
                log.warning(
                    "%s: the cursor is not saved (%s cannot be written): %s at the next start",
                    self.sink.name,
                    self._cursors.path,
                    self.sink.traits.repeated_after_restart,
                )
            self.close()

    def _save(self, at_once: bool = False) -> bool:
        """Save the cursor; False when the disk refused it (it waits, see CursorStore)."""
        self._cursors.set(self.sink.name, self.cursor)
        return self._cursors.save(at_once)
