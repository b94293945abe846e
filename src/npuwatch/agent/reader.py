"""The reader thread: rescans, file events and reads, until asked to stop.

It sleeps until a file event, the next rescan or the next idle deadline; open files are also
looked at every `poll_interval`, which keeps growth visible where events never come (NFS) at the
cost of one `fstat` per open file.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from npuwatch.collector.tailer import Emit, FileTailer, StopReading
from npuwatch.collector.watch import FileWatcher

log = logging.getLogger(__name__)


# 2**40 quiet pauses is far past any poll interval; the count stays a small number
_MOST_QUIET_ROUNDS = 40


@dataclass(frozen=True)
class ReaderTiming:
    rescan_interval_s: float = 10.0
    poll_interval_s: float = 1.0
    idle_check_s: float = 0.5
    quiet_pause_s: float = 0.25
    """The pause between reading rounds when files are written slowly. Open files are watched by
    rounds (an fstat each), not by file events: an event per write cost more than reading (see
    collector/watch.py). After a round that found nothing, the pause doubles up to
    `poll_interval_s` while rounds find nothing; a trickle (less than `busy_bytes` read since
    the last pause) is read every `quiet_pause_s`, in batches rather than line by line; and
    while more than that comes in, rounds follow each other at once, so that a flood never
    waits on a pause while the backlog grows on disk."""
    busy_bytes: int = 64 * 1024


class ReaderStage:
    """Drives a FileTailer in its own thread."""

    def __init__(
        self,
        tailer: FileTailer,
        watcher: FileWatcher | None,
        wake: threading.Event,
        timing: ReaderTiming,
        stop: threading.Event,
        monotonic: Callable[[], float] = time.monotonic,
        emit_at_stop: Emit | None = None,
    ) -> None:
        self.tailer = tailer
        self._emit_at_stop = emit_at_stop
        """Takes the records still being assembled when reading stops (None: they are read
        again at the next start)."""
        self.watcher = watcher
        self._wake = wake
        self.timing = timing
        self._stop = stop
        self._monotonic = monotonic
        self.started = threading.Event()
        """Set once the first rescan is done and the files are being followed."""
        self.thread = threading.Thread(target=self._run, name="npuwatch-reader", daemon=True)
        self._pending_change: Callable[[FileTailer], None] | None = None

    def start(self) -> None:
        self.thread.start()

    def change(self, apply: Callable[[FileTailer], None]) -> None:
        """Run `apply` on the tailer in the reader thread, between rounds (a reload)."""
        self._pending_change = apply
        self._wake.set()

    def _run(self) -> None:
        try:
            with contextlib.suppress(StopReading):
                self._loop()
            if self._emit_at_stop is not None:
                self.tailer.flush_assembled(self._emit_at_stop)
        except StopReading:
            pass  # the pipeline gave up: what was not handed on is read again at the next start
        finally:
            self.tailer.close()
            if self.watcher is not None:
                self.watcher.stop()

    def _loop(self) -> None:
        next_rescan = 0.0
        next_idle = 0.0
        quiet_rounds = 0
        streak_bytes = 0  # read since the last pause
        while not self._stop.is_set():
            now = self._monotonic()
            change, self._pending_change = self._pending_change, None
            if change is not None:
                change(self.tailer)
                next_rescan = 0.0
            if now >= next_rescan:
                self.tailer.rescan()
                if self.watcher is not None:
                    self.watcher.watch(self.tailer.roots)
                next_rescan = now + self.timing.rescan_interval_s
                self.started.set()
            self._wake.clear()
            read = self.tailer.poll()
            streak_bytes += read
            if now >= next_idle:
                self.tailer.idle_work()
                next_idle = now + self.timing.idle_check_s
            if read:
                quiet_rounds = 0
                if streak_bytes >= self.timing.busy_bytes:
                    continue
            else:
                # capped: the pause stops doubling at poll_interval_s long before this, and a
                # loop woken again and again (events, rescans) must not grow it without end
                quiet_rounds = min(quiet_rounds + 1, _MOST_QUIET_ROUNDS)
            streak_bytes = 0
            pause = min(
                self.timing.quiet_pause_s * 2 ** max(quiet_rounds - 1, 0),
                self.timing.poll_interval_s,
            )
            timeout = min(
                pause,
                max(next_rescan - self._monotonic(), 0.0),
                max(next_idle - self._monotonic(), 0.0) + 0.001,
            )
            self._wake.wait(timeout)  # a file event (a new file, a deletion) cuts it short
