"""The reader thread: rescans, file events and reads, until asked to stop.

It sleeps until a file event, the next rescan or the next idle deadline; open files are also
looked at every `poll_interval`, which keeps growth visible where events never come (NFS) at the
cost of one `fstat` per open file.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from npuwatch.collector.tailer import FileTailer, StopReading
from npuwatch.collector.watch import FileWatcher

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReaderTiming:
    rescan_interval_s: float = 10.0
    poll_interval_s: float = 1.0
    idle_check_s: float = 0.5


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
    ) -> None:
        self.tailer = tailer
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
            self._loop()
        except StopReading:
            pass
        finally:
            self.tailer.close()
            if self.watcher is not None:
                self.watcher.stop()

    def _loop(self) -> None:
        next_rescan = 0.0
        next_idle = 0.0
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
            busy = self.tailer.poll()
            if now >= next_idle:
                self.tailer.idle_work()
                next_idle = now + self.timing.idle_check_s
            if busy:
                continue
            timeout = min(
                self.timing.poll_interval_s,
                max(next_rescan - self._monotonic(), 0.0),
                max(next_idle - self._monotonic(), 0.0) + 0.001,
            )
            self._wake.wait(timeout)
