"""A small state file, rewritten whole, that waits out a disk that refuses it.

The agent keeps a few such files beside its journal: the sinks' cursors, the profiling runs
already imported and their figures. Each only ever needs its latest content, and what it holds
in memory stays right while the disk is full: so a write the disk refuses (no space, a
read-only file system) does not stop the thread that asked for it. The content waits, the next
write is tried after a pause that grows to `max_pause_s`, one ERROR line says what a restart in
the meantime would repeat, and one line says when the file is written again. Nothing is lost:
at worst, after a restart, what was done since the last write is done again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from npuwatch.durable_files import write_atomically
from npuwatch.private_files import make_private

log = logging.getLogger(__name__)

FIRST_PAUSE_S = 0.5


class StateFile:
    """One atomically written state file, with the content a refused write left waiting."""

    def __init__(
        self,
        path: Path,
        repeated: str,
        max_pause_s: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._repeated = repeated
        """What a restart repeats while the file is behind, for the log line."""
        self._max_pause_s = max_pause_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._waiting: bytes | None = None
        self._pause_s = 0.0
        self._retry_at = 0.0
        # One an older version wrote with the umask's mode; the next write replaces it anyway
        # (0600), so a file this user may not change is no reason to stop.
        with contextlib.suppress(OSError):
            make_private(path)

    @property
    def behind(self) -> bool:
        """True while the file lacks content a refused write left waiting."""
        return self._waiting is not None

    def save(self, data: bytes, at_once: bool = False) -> bool:
        """Replace the file with `data`; True when it holds it. After a refused write, `data`
        waits until the pause is over (or `at_once`: a last try, when stopping)."""
        with self._lock:
            self._waiting = data
            return self._write(at_once)

    def retry(self) -> bool:
        """Write what a refused write left waiting, once its pause is over; True when nothing
        is waiting any more."""
        with self._lock:
            return self._waiting is None or self._write(at_once=False)

    def _write(self, at_once: bool) -> bool:
        data = self._waiting
        assert data is not None
        now = self._monotonic()
        if self._pause_s and not at_once and now < self._retry_at:
            return False
        try:
            write_atomically(self.path, data)
        except OSError as error:
            if not self._pause_s:
                log.error(
                    "cannot write %s (%s): retrying, nothing is lost; until it is written, a "
                    "restart %s. Free space in %s",
                    self.path,
                    error.strerror or error,
                    self._repeated,
                    self.path.parent,
                )
            self._pause_s = min(max(self._pause_s * 2, FIRST_PAUSE_S), self._max_pause_s)
            self._retry_at = now + self._pause_s
            return False
        if self._pause_s:
            log.warning("%s is written again", self.path)
            self._pause_s = 0.0
        self._waiting = None
        return True
