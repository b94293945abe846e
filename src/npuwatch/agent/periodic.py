"""A thread that looks again every interval: the profiling and debugging-tool importers.

Each round calls `scan`; an exception in it is a bug, logged with its traceback, and the next
round tries again, so that one bad output cannot end the imports for good. The thread waits on
the agent's stop event, so a stop ends the wait at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """`scan` every `interval_s` in a thread named `name`, until `stop` is set."""

    def __init__(
        self,
        name: str,
        scan: Callable[[], object],
        interval_s: float,
        stop: threading.Event,
        failed: str,
    ) -> None:
        self._scan = scan
        self._interval_s = interval_s
        self._stop = stop
        self._failed = failed
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._scan()
            except Exception:  # a bug here must not end the imports for good
                log.exception("%s; trying again next interval", self._failed)
            self._stop.wait(self._interval_s)
