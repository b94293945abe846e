"""The console sink: prints journal entries as they are committed, through a named cursor.

The first reader of the journal, and the model for the others: it reads after its cursor, a
page at a time, and moves the cursor only over what it has written out. Text mode prints the
original lines (what `tail -F` would have shown, from every file); JSON mode prints one ECS
document per line. Events are printed as one line each (text) or their documents (JSON).

Neither a full disk nor a refusing output stops it: the cursor file is written when there is
room (until then a restart prints again what was printed since its last write), and a page the
output refused (stdout redirected to a full disk) is printed again from the cursor after a
pause, so a line may be printed twice but none is skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Literal, TextIO

from npuwatch.journal.block import decode_block
from npuwatch.journal.cursors import Cursor, CursorStore
from npuwatch.journal.documents import to_record
from npuwatch.journal.reader import JournalReader
from npuwatch.sinks.console import to_json_line
from npuwatch.sinks.event_text import event_line

CURSOR_NAME = "console"

log = logging.getLogger(__name__)

_MAX_PAUSE_S = 30.0


class ConsoleSink:
    """Prints new journal entries to `out` from its own thread."""

    def __init__(
        self,
        journal_directory: Path,
        cursors: CursorStore,
        committed: threading.Condition,
        stop: threading.Event,
        out: TextIO,
        output: Literal["text", "json"] = "text",
        events_only: bool = False,
        save_interval_s: float = 1.0,
    ) -> None:
        self._reader = JournalReader(journal_directory)
        self._cursors = cursors
        self._committed = committed
        self._stop = stop
        self._out = out
        self._json = output == "json"
        self._events_only = events_only
        self._save_interval_s = save_interval_s
        self.thread = threading.Thread(target=self._run, name="npuwatch-console", daemon=True)
        cursor = cursors.get(CURSOR_NAME)
        blocks, events = self._reader.end()
        if cursor is None or cursor.blocks > blocks or cursor.events > events:
            # First start, or a journal newer than the cursor (it was deleted and started
            # again): print what arrives from now on, not the whole history.
            cursor = Cursor(blocks, events)
            cursors.set(CURSOR_NAME, cursor)
        self.cursor = cursor

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        last_save = time.monotonic()
        pause = 0.0
        try:
            while True:
                stopping = self._stop.is_set()
                try:
                    moved = self.pump()
                except OSError as error:
                    moved = False
                    if not pause:
                        log.error(
                            "cannot print to the console (%s): printing again from the last "
                            "line printed once it can (a line may be printed twice)",
                            error.strerror or error,
                        )
                    pause = min(max(pause * 2, 0.5), _MAX_PAUSE_S)
                    if self._stop.wait(pause):
                        return
                    continue
                if pause:
                    log.warning("the console takes output again")
                    pause = 0.0
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
                    "console: the cursor is not saved (%s cannot be written): what was printed "
                    "since its last write is printed again at the next start",
                    self._cursors.path,
                )
            self._reader.close()

    def pump(self) -> bool:
        """Print one page of blocks and events after the cursor; True when there was one. The
        cursor moves once the page is flushed: an output that fails (OSError) leaves it."""
        cursor = self.cursor
        moved = False
        if not self._events_only:
            for position, block in self._reader.blocks_after(cursor.blocks):
                for stored in decode_block(block.payload):
                    if self._json:
                        self._out.write(to_json_line(to_record(stored, block.source)) + "\n")
                    else:
                        self._out.write(stored.original + "\n")
                cursor = Cursor(position, cursor.events)
                moved = True
        for position, document in self._reader.events_after(cursor.events):
            self._out.write((document if self._json else event_line(document)) + "\n")
            cursor = Cursor(cursor.blocks, position)
            moved = True
        if moved:
            self._out.flush()
        self.cursor = cursor
        return moved

    def _save(self, at_once: bool = False) -> bool:
        """Save the cursor; False when the disk refused it (it waits, see CursorStore)."""
        self._cursors.set(CURSOR_NAME, self.cursor)
        return self._cursors.save(at_once)
