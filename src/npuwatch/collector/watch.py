"""File events as wake-up hints: watchdog's observer thread tells the reader where to look.

Hints only. inotify drops events when its queue overflows, runs out of watches on a host with
thousands of PID folders, and sees nothing on NFS; the reader's periodic rescan covers all of
that, so a watch that cannot be set up is logged once and counted, never fatal.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from npuwatch.metrics import SelfMetrics

log = logging.getLogger(__name__)


class FileHints(Protocol):
    """Where file events go (the tailer): called from the observer thread."""

    def hint(self, path: str, created: bool = False) -> None: ...

    def moved(self, source: str, destination: str) -> None: ...


_EVENTS = [
    FileCreatedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]
"""What is asked of inotify: files and folders appearing, moving and going. Not writes: every
write of a logging process is one event, and watchdog's three threads spend about 0.3 ms on
each, which at 100 lines/s was half of the agent's CPU. Growth of open files is seen by the
reader's fstat round every poll interval instead (see agent/reader.py). Not opens and closes
either: the agent's own reads would wake it."""


class _HintHandler(FileSystemEventHandler):
    def __init__(self, hints: FileHints, wake: threading.Event) -> None:
        self._hints = hints
        self._wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            return
        source = os.fsdecode(event.src_path)
        destination = getattr(event, "dest_path", "")
        if destination:
            # A rename, not a deletion: a file renamed before it was read is not lost.
            self._hints.moved(source, os.fsdecode(destination))
        else:
            self._hints.hint(source, event.event_type == "created")
        self._wake.set()


class FileWatcher:
    """Watches the log roots recursively and turns every file event into a hint."""

    def __init__(
        self,
        hints: FileHints,
        wake: threading.Event,
        metrics: SelfMetrics,
        observer_factory: Callable[[], BaseObserver] = Observer,
    ) -> None:
        self._handler = _HintHandler(hints, wake)
        self._metrics = metrics
        self._make_observer = observer_factory
        self._observer: BaseObserver | None = None
        """Made at the first root to watch: watchdog's inotify observer starts a thread and
        opens descriptors as soon as it is made, which a watcher that never watches must not."""
        self._watched: set[Path] = set()
        self._failed: set[Path] = set()

    def watch(self, roots: Sequence[Path]) -> None:
        """Watch every root that exists and is not watched yet (called at each rescan)."""
        for root in roots:
            if root in self._watched or not root.is_dir():
                continue
            try:
                self._observing().schedule(
                    self._handler, str(root), recursive=True, event_filter=_EVENTS
                )
            except OSError as error:  # no inotify instance or watch left (ENOSPC, EMFILE)
                if root not in self._failed:
                    self._failed.add(root)
                    self._metrics.source_problems.labels("watch_failed").inc()
                    log.warning(
                        "cannot watch %s for file events (%s); it is still rescanned", root, error
                    )
                continue
            self._watched.add(root)
            self._failed.discard(root)
        self._metrics.watching.set(1 if self._watched and not self._failed else 0)

    def _observing(self) -> BaseObserver:
        """The observer, started before it watches anything: a watch that cannot be set up
        then fails in `schedule`, for its root alone, and not in `start` for all of them."""
        if self._observer is None:
            observer = self._make_observer()
            observer.name = "npuwatch-watch"
            observer.daemon = True
            try:
                observer.start()
            except BaseException:
                observer.stop()  # its inotify thread runs from the moment it was made
                raise
            self._observer = observer
        return self._observer

    @property
    def thread(self) -> threading.Thread | None:
        """The observer thread, once a root was watched."""
        return self._observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
