"""Files that exist but are still empty: held open until their first bytes come.

An empty file cannot be identified (the fingerprint is taken from its first bytes), but it must
not wait for the next rescan either: CANN creates a file and writes into it a moment later, and
under fast rotation the file can be gone before a rescan looks (each of 20 KB rotated files
lives under two seconds). So the file is held open from the moment it is seen, its size asked at
every reading round, and it is followed as soon as it has a byte; a file deleted while held is
still readable through the descriptor.

An empty file that stays empty past the idle-close time is let go and remembered, so that the
next rescans do not open it again while it is still empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from npuwatch.collector.identity import FileIdentity

InodeKey = tuple[int, int]


@dataclass
class EmptyFile:
    path: str
    fd: int
    opened: float
    """Monotonic time it was opened (for the idle close)."""
    previous: FileIdentity | None = None
    """The identity of what it held before it was truncated in place, if it was."""


class EmptyFiles:
    """The empty files held open, by device and inode."""

    def __init__(self) -> None:
        self._held: dict[InodeKey, EmptyFile] = {}
        self._let_go: set[InodeKey] = set()
        """Empty files closed for being idle: not opened again while they are still empty."""

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key: InodeKey) -> bool:
        return key in self._held

    def hold(self, key: InodeKey, empty: EmptyFile) -> None:
        self._let_go.discard(key)
        self._held[key] = empty

    def is_let_go(self, key: InodeKey, status: os.stat_result) -> bool:
        """Whether a file found by a rescan is an empty file let go, still empty."""
        if status.st_size:
            self._let_go.discard(key)
            return False
        return key in self._let_go

    def renamed(self, key: InodeKey, path: str) -> bool:
        """Note a new name of a held file; False when the file is not held."""
        empty = self._held.get(key)
        if empty is None:
            return False
        empty.path = path
        return True

    def holds_path(self, path: str) -> bool:
        return any(empty.path == path for empty in self._held.values())

    def grown(self) -> Iterator[tuple[EmptyFile, os.stat_result]]:
        """The held files that have bytes now (no longer held), with their status. Files
        deleted while still empty are closed and forgotten: nothing was in them."""
        for key, empty in list(self._held.items()):
            try:
                status = os.fstat(empty.fd)
            except OSError:
                self._close(key)
                continue
            if status.st_size:
                del self._held[key]
                yield empty, status
            elif status.st_nlink == 0:
                self._close(key)

    def take_oldest(self) -> EmptyFile | None:
        """Let the longest-held file go (to stay within the descriptor bound): a rescan finds
        it again."""
        if not self._held:
            return None
        key = next(iter(self._held))
        empty = self._held.pop(key)
        os.close(empty.fd)
        return empty

    def keep_only(self, seen: Iterable[InodeKey]) -> None:
        """After a rescan: close the held files it no longer found (deleted or moved away while
        empty: nothing is lost) and forget the let-go ones that are gone."""
        present = set(seen)
        for key in [key for key in self._held if key not in present]:
            self._close(key)
        self._let_go &= present

    def close_idle(self, now: float, idle_s: float) -> None:
        for key, empty in list(self._held.items()):
            if now - empty.opened >= idle_s:
                self._close(key)
                self._let_go.add(key)

    def close(self) -> None:
        for key in list(self._held):
            self._close(key)

    def _close(self, key: InodeKey) -> None:
        empty = self._held.pop(key)
        os.close(empty.fd)
