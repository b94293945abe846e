"""Reading a journal segment around its damage, and saying once for each segment what is lost.

A segment is an SQLite file, and a failing disk, a hard reset or an edit by hand can damage any
part of it: the header (nothing of it can be read), one page of a table or of an index, the
payload of one row, or the content of a row that SQLite reads well (a block that does not
decompress, a text whose dictionary is gone, a document that is not JSON). Every reader of the
journal (`grep`, the sinks' follower, `correlate --journal`) does the same about it:

- what cannot be a segment, or what SQLite cannot open, is left out whole;
- a table is read in the order of its key, a page at a time, and where a page cannot be read the
  rows after the last one read are taken one at a time while they read; at the first that does
  not, the smallest key from which reading works again is found by probing ahead (a step that
  doubles, then halves back), and reading goes on from there. So what is lost is what SQLite
  cannot read (the rows of one damaged page, or the one row whose payload is damaged), never the
  rest of the segment;
- a row whose content does not decode is left out alone (the caller does that: it knows the
  content);
- each damaged segment is named once, on one line that says what is done: what can be read is
  served, the file is left where it is (readers never move or change the journal; the agent
  sets a damaged newest segment aside when it starts: journal/store.py).

An error that says SQLite is busy for a moment (a lock, memory) is no damage: it is raised, and
the caller tries again later rather than leaving anything out.

This module is on `grep`'s index path (docs/adr/0002-grep-start-up.md): it imports only os,
sqlite3 and threading (no pathlib).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

Row = TypeVar("Row")

_LARGEST_KEY = (1 << 63) - 1
"""SQLite's largest rowid: how far ahead a probe for readable rows may look."""
_PASSING_NAMES = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_NOMEM", "SQLITE_INTERRUPT")
_PASSING_WORDS = ("database is locked", "database table is locked", "out of memory", "interrupt")


def is_damage(error: BaseException) -> bool:
    """Whether `error`, raised while reading a segment, says the file is damaged (as opposed to
    busy for a moment, or a mistake in the program, which are raised as they are)."""
    if isinstance(error, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return False
    if not isinstance(error, sqlite3.DatabaseError):
        return False
    name = getattr(error, "sqlite_errorname", None)  # Python 3.11 and later
    if isinstance(name, str):
        return not name.startswith(_PASSING_NAMES)
    return not any(words in str(error) for words in _PASSING_WORDS)


class DamageNotice:
    """Says, once for each damaged segment, that it is read around: one line through `say`
    (standard error for a command, the log for the agent). The readers of one process share
    one, so that a segment is named once however many read it."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._lock = threading.Lock()  # the agent's followers share one, each in its thread
        self.segments: dict[str, str] = {}
        """What was said of each damaged segment (by path), in the order they were met."""

    def unreadable(self, path: str | os.PathLike[str], problem: object) -> None:
        """Nothing of the segment at `path` can be read: it is left out whole."""
        self._note(path, f"cannot be read ({_one_line(problem)}): it is left out")

    def damaged(self, path: str | os.PathLike[str], problem: object) -> None:
        """Part of the segment at `path` cannot be read: the rest of it is served."""
        self._note(
            path, f"is damaged ({_one_line(problem)}): what cannot be read of it is left out"
        )

    def _note(self, path: str | os.PathLike[str], what: str) -> None:
        name = os.fspath(path)
        with self._lock:
            if name in self.segments:
                return
            self.segments[name] = what
        aside = os.path.join(os.path.dirname(name), "quarantine")  # noqa: PTH118, PTH120
        self._say(
            f"journal segment {name} {what}, the rest of the journal is served; the file is left "
            f"where it is (move it into {aside}/ to keep it for a post-mortem)"
        )


def _one_line(problem: object) -> str:
    text = " ".join(str(problem).split())
    return text or type(problem).__name__


def page_around_damage(
    fetch: Callable[[int, int], list[Row]],
    key: Callable[[Row], int],
    after: int,
    limit: int,
    damaged: Callable[[object], None],
) -> list[Row]:
    """Up to `limit` rows after key `after`, stepping over what cannot be read.

    `fetch(first, limit)` reads up to `limit` rows whose key is `first` or above, in key order
    (`key >= ?`, not `key > ?`: SQLite seeks a `>` to the key itself first, which may be on the
    damaged page when the row after it is not). When it fails with damage, `damaged` is told,
    and the rows are read one at a time; a row that cannot be read is stepped over with
    everything SQLite cannot reach around it (see the module's docstring). Errors that are no
    damage are raised."""
    try:
        return fetch(after + 1, limit)
    except sqlite3.DatabaseError as error:
        if not is_damage(error):
            raise
        damaged(error)
    rows: list[Row] = []
    first = after + 1
    while len(rows) < limit:
        try:
            found = fetch(first, 1)
        except sqlite3.DatabaseError as error:
            if not is_damage(error):
                raise
            resumed = _readable_from(fetch, first)
            if resumed is None:
                break
            first = resumed
            continue
        if not found:
            break
        rows.extend(found)
        first = key(found[0]) + 1
    return rows


def _readable_from(fetch: Callable[[int, int], list[Row]], failing: int) -> int | None:
    """The smallest key above `failing` from which rows can be read again (or from which there
    are none), or None when reading fails all the way to the largest key."""

    def readable(first: int) -> bool:
        try:
            fetch(first, 1)
        except sqlite3.DatabaseError as error:
            if not is_damage(error):
                raise
            return False
        return True

    low, step = failing, 1
    while True:  # ahead by 1, 2, 4 ...: a damaged page holds a few hundred rows at most
        probe = min(failing + step, _LARGEST_KEY)
        if readable(probe):
            high = probe
            break
        low = probe
        if probe == _LARGEST_KEY:
            return None
        step *= 2
    while high - low > 1:  # then back, to lose no readable row before `high`
        middle = (low + high) // 2
        if readable(middle):
            high = middle
        else:
            low = middle
    return high
