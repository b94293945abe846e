"""File events as the tailer takes them: paths to look at, and created files not yet followed.

The watcher's thread adds (`hint`, `moved`); the reader's thread takes them, once a round. A path
an event said was created is *unresolved* until the tailer follows it. If it is gone when the
tailer looks, it is *missing*: lost, unless an event says within `MOVE_GRACE_S` that it was
renamed (watchdog holds a rename back for half a second to pair its two halves, so the creation
can come a round before the rename), or its inode turns up under another name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MOVE_GRACE_S = 5.0


@dataclass(frozen=True)
class Missing:
    """A path found gone before it was followed."""

    since: float
    inode: tuple[int, int] | None = None
    """Its device and inode, when it was seen before it went."""
    size: int | None = None
    """Its size then (a lower bound of what was lost); None when never seen."""


class FileEvents:
    def __init__(self) -> None:
        self._hints: set[str] = set()
        self._created: set[str] = set()
        self._moves: dict[str, str] = {}
        self._unresolved: set[str] = set()
        self._missing: dict[str, Missing] = {}

    # Called from the watcher thread: one set or dict operation each, atomic under the GIL.

    def hint(self, path: str, created: bool = False) -> None:
        """Look at `path` at the next round."""
        self._hints.add(path)
        if created:
            self._created.add(path)

    def moved(self, source: str, destination: str) -> None:
        """`source` was renamed to `destination`."""
        self._moves[source] = destination
        self._hints.add(source)
        self.hint(destination, created=True)

    # Called from the reader thread.

    def take(self, wanted: Callable[[str], bool]) -> set[str]:
        """The paths to look at since the last round (created ones that are `wanted` become
        unresolved; renamed ones are no longer missing)."""
        hints, self._hints = self._hints, set()
        created, self._created = self._created, set()
        moves, self._moves = self._moves, {}
        self._unresolved.update(path for path in created if wanted(path))
        for source in moves:
            self._unresolved.discard(source)
            self._missing.pop(source, None)
        return hints

    def is_unresolved(self, path: str) -> bool:
        return path in self._unresolved

    def resolved(self, path: str) -> bool:
        """`path` is followed, or needs no following: whether it was unresolved."""
        self._missing.pop(path, None)
        if path in self._unresolved:
            self._unresolved.discard(path)
            return True
        return False

    def went_missing(self, path: str, missing: Missing) -> None:
        self._unresolved.discard(path)
        self._missing.setdefault(path, missing)

    def overdue(self, now: float) -> list[tuple[str, Missing]]:
        """The paths missing for longer than the grace, no rename heard of: forgotten here."""
        due = [(path, m) for path, m in self._missing.items() if now - m.since >= MOVE_GRACE_S]
        for path, _ in due:
            del self._missing[path]
        return due
