"""The journal: a directory of segments, one written at a time, with retention and quarantine.

Segments are named `segment-<sequence>.db` and only ever grow, then close: a new one starts at
each UTC day and when the active one passes its size bound; a restart goes on writing the newest
one when it is sound, of the day and under its bound. Every new segment begins with the full
set of checkpoints, so the newest readable segment alone tells where every file stands; when it is
lost (a hard reset that corrupted it), the one before it does, and the agent reads again exactly
what the lost segment held, as long as the files still exist.

A segment SQLite cannot read is moved to `quarantine/` with one log line, and the rest is served.

Segments hold whole log lines: the folders are 0700 and the files 0600 whatever the umask (see
private_files), and those an older version made with the umask's modes are tightened at open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.handoff import Checkpoint, EventRow, StateRow
from npuwatch.journal.layout import (
    SIDE_FILES,
    not_a_file,
    segment_file_name,
    segment_files,
    side_file_problem,
)
from npuwatch.journal.segment import BlockToWrite, Segment, Sync
from npuwatch.private_files import create_private, make_private, private_directory

_QUARANTINED = re.compile(r"^segment-(\d{8})\.db\.")
_DAY_US = 86_400 * 1_000_000


def _utc_day(seconds: float) -> int:
    """The UTC day (since the epoch) of a time in seconds: a segment holds one day's writes."""
    return int(seconds * 1_000_000) // _DAY_US


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JournalSettings:
    max_age_s: float = 30 * 86_400
    max_bytes: int = 10 * 1024**3
    segment_bytes: int = 256 * 1024**2
    sync: Sync = "full"
    compress: bool = True


@dataclass
class CommitBatch:
    """What one transaction writes: blocks, events and states, and the checkpoints they
    reach."""

    blocks: list[BlockToWrite] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    forget: list[str] = field(default_factory=list)
    """Files gone for good: their checkpoints are dropped."""
    states: list[StateRow] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.blocks or self.events or self.checkpoints or self.forget or self.states)


class JournalUnavailable(Exception):
    """The journal cannot take writes now (disk full, read-only file system); retry later."""


ROOM_BYTES = 256 * 1024
"""Free bytes below which a write error is taken as a full disk, not damage (a segment's -shm
file alone takes 32 KiB)."""


def no_room(directory: Path) -> bool:
    """Whether the file system of `directory` (or of its nearest existing parent) is full."""
    for folder in (directory, *directory.parents):
        try:
            status = os.statvfs(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        return status.f_bavail * status.f_frsize < ROOM_BYTES
    return False


def segment_path(directory: Path, sequence: int) -> Path:
    return directory / segment_file_name(sequence)


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """(sequence, path) of the segments in `directory`, oldest first."""
    return [(sequence, Path(path)) for sequence, path in segment_files(directory)]


def segment_bytes_on_disk(path: Path) -> int:
    total = 0
    for suffix in ("", *SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            total += Path(f"{path}{suffix}").stat().st_size
    return total


def quarantine(path: Path, reason: str) -> Path:
    """Move a segment (with its WAL) aside, so that the rest of the journal keeps working."""
    target_dir = path.parent / "quarantine"
    private_directory(target_dir)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = target_dir / f"{path.name}.{stamp}"
    for suffix in ("", *SIDE_FILES):
        source = f"{path}{suffix}"
        if os.path.lexists(source):  # a link that leads nowhere is moved too
            shutil.move(source, f"{target}{suffix}")
    log.error(
        "journal segment %s is unreadable (%s); moved to %s, the rest of the journal is served",
        path,
        reason,
        target,
    )
    return target


class Journal:
    """The writer's view of the journal: one active segment, checkpoints, retention."""

    def __init__(
        self,
        directory: Path,
        settings: JournalSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self.settings = settings or JournalSettings()
        self._clock = clock
        self._active: Segment | None = None
        self._previous: Segment | None = None
        """The segment before the active one, read-only: what a replay may repeat."""
        self._previous_looked_for = False
        self._active_day = -1
        self.checkpoints: dict[str, Checkpoint] = {}
        self.quarantined = 0
        """Segments moved to quarantine since start."""
        self._snapshot_pending = False

    # --- opening --------------------------------------------------------------------------

    def open(self) -> None:
        """Check the newest segments, load the checkpoints, and choose the segment to write;
        JournalUnavailable when the disk has no room for that (nothing is set aside then)."""
        try:
            self._open()
        except JournalUnavailable:
            self.close()
            raise
        except (OSError, sqlite3.OperationalError) as error:
            if not no_room(self.directory):
                raise
            self.close()
            raise JournalUnavailable(f"{error} (the disk is full)") from error

    def _open(self) -> None:
        self._set_aside_what_is_no_file()
        self._make_private()
        for sequence, path in reversed(list_segments(self.directory)):
            segment = self._open_checked(sequence, path)
            if segment is None:
                continue
            if segment.has_checkpoints():
                self.checkpoints = {c.file_key: c for c in segment.checkpoints()}
                if self._may_continue(segment):
                    self._active = segment
                    self._active_day = self._day_of(segment.path)
                    return
                segment.close()
                break
            # A segment created just before a crash, before its first commit: it holds nothing.
            segment.close()
            self._delete(path)
        self._start_segment()

    def _may_continue(self, segment: Segment) -> bool:
        """Whether the agent goes on writing the newest segment rather than starting one: when
        it is sound, of today and under its size bound, and no newer one was set aside (a
        reader's position in a quarantined segment is past it: what it got next would never be
        read). A start used to open a new segment each time: a service restarted every few
        seconds made thousands, and an event's context, a few segments back, was not found."""
        if segment.sequence != self._next_sequence() - 1:
            return False
        if self._day_of(segment.path) != _utc_day(self._clock()):
            return False
        return segment_bytes_on_disk(segment.path) < self.settings.segment_bytes

    @staticmethod
    def _day_of(path: Path) -> int:
        """The UTC day a segment was last written (a segment rolls at the first commit of a new
        day, so that is the day it holds)."""
        try:
            return _utc_day(path.stat().st_mtime)
        except FileNotFoundError:
            return -1

    def _set_aside_what_is_no_file(self) -> None:
        """Move to quarantine whatever has a segment's name and is no regular file (a folder, a
        FIFO, a link), or has no regular file beside it as its -wal or -shm: nothing could read
        it, opening a FIFO would wait for ever, and retention could not delete it."""
        for _, path in list_segments(self.directory):
            self._set_aside_unless_file(path)

    def _set_aside_unless_file(self, path: Path) -> bool:
        """Quarantine `path` when it is no regular file; whether it was."""
        try:
            problem = not_a_file(path.lstat().st_mode) or side_file_problem(path)
        except FileNotFoundError:
            return False
        if problem is None:
            return False
        quarantine(path, problem)
        self.quarantined += 1
        return True

    def _make_private(self) -> None:
        private_directory(self.directory)
        # A WAL an older version left is folded in and deleted when its segment is checked.
        for _, path in list_segments(self.directory):
            make_private(path)
        aside = self.directory / "quarantine"
        if aside.is_dir():
            private_directory(aside)
            for entry in aside.iterdir():
                # What was set aside for being no regular file (a link, a FIFO) stays as it is.
                if entry.is_file() and not entry.is_symlink():
                    make_private(entry)

    def _open_checked(self, sequence: int, path: Path) -> Segment | None:
        if path.stat().st_size == 0:
            # Segment() writes the file's header before anything else, so an empty file is
            # damage, not a segment created just before a crash; opening it would make it a new
            # empty database and the deletion below would take its WAL (its commits) with it.
            quarantine(path, "empty file")
            self.quarantined += 1
            return None
        segment: Segment | None = None
        try:
            segment = Segment(path, sequence, self.settings.sync)
            problem = segment.quick_check()
        except sqlite3.DatabaseError as error:  # the check itself failed: closed below
            if isinstance(error, sqlite3.OperationalError) and no_room(self.directory):
                # SQLite says "disk I/O error" when it cannot make the segment's -shm file on
                # a full disk: the segment is sound, and setting it aside would lose its
                # checkpoints (every file read again from its start).
                if segment is not None:
                    segment.close()
                raise JournalUnavailable(f"{error} (the disk is full)") from error
            problem = str(error)
        if problem is None and segment is not None:
            return segment
        if segment is not None:
            segment.close()
        quarantine(path, problem or "unknown")
        self.quarantined += 1
        return None

    def _start_segment(self) -> None:
        sequence = self._next_sequence()
        path = segment_path(self.directory, sequence)
        if self._active is not None:
            self._active.checkpoint_wal()
        try:
            # SQLite gives the -wal and -shm files the mode of the database file: 0600 from
            # the start, so that none of them is ever readable by others.
            os.close(create_private(path))
            segment = Segment(path, sequence, self.settings.sync)
        except BaseException:
            # Disk full: the active segment stays, and the roll is tried again at the next
            # commit. A half-made file left behind would look like a damaged segment.
            self._delete(path)
            raise
        if self._active is not None:
            self._active.close()
        self._close_previous()
        self._active = segment
        self._active_day = _utc_day(self._clock())
        self._snapshot_pending = True

    def _next_sequence(self) -> int:
        """One past every sequence in use or in quarantine: a number is never given twice, so
        that a reader's position in a quarantined segment never points into a new one."""
        used = [sequence for sequence, _ in list_segments(self.directory)]
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in (self.directory / "quarantine").iterdir():
                match = _QUARANTINED.match(entry.name)
                if match:
                    used.append(int(match[1]))
        return max(used, default=0) + 1

    def close(self) -> None:
        self._close_previous()
        if self._active is not None:
            with contextlib.suppress(sqlite3.Error):
                self._active.checkpoint_wal()
            self._active.close()
            self._active = None

    # --- writing --------------------------------------------------------------------------

    def commit(self, batch: CommitBatch) -> None:
        """Write a batch durably; raises JournalUnavailable when the disk cannot take it."""
        assert self._active is not None, "open() first"
        now_us = int(self._clock() * 1_000_000)
        try:
            if self._should_roll(now_us):
                self._start_segment()
            checkpoints = dict(self.checkpoints)
            for key in batch.forget:
                checkpoints.pop(key, None)
            checkpoints.update((c.file_key, c) for c in batch.checkpoints)
            snapshot = self._snapshot_pending
            self._active.append(
                batch.blocks,
                self._not_yet_journaled(batch.events),
                checkpoints.values() if snapshot else batch.checkpoints,
                batch.forget,
                now_us,
                snapshot=snapshot,
                states=batch.states,
            )
        except sqlite3.OperationalError as error:
            raise JournalUnavailable(str(error)) from error
        except OSError as error:
            raise JournalUnavailable(f"{error.strerror or error}") from error
        self._snapshot_pending = False
        self.checkpoints = checkpoints

    def _not_yet_journaled(self, events: list[EventRow]) -> list[EventRow]:
        """`events` without those the segment before the active one holds already. After a
        restart the rules read again the records they keep as context, and an event they had
        journaled fires again with the same id: the active segment ignores a repeat of its own,
        and this keeps one of the segment before from being journaled twice (a sink that cannot
        overwrite by id, a console or an alert receiver, would say it twice)."""
        if not events:
            return events
        previous = self._previous_segment()
        if previous is None:
            return events
        known = previous.known_events([event.id for event in events])
        return [event for event in events if event.id not in known] if known else events

    def _previous_segment(self) -> Segment | None:
        """Opened at the first event after a start or a roll (retention may delete it later;
        a read that fails then is taken as "holds none")."""
        assert self._active is not None
        if self._previous_looked_for:
            return self._previous
        self._previous_looked_for = True
        older = [(s, p) for s, p in list_segments(self.directory) if s < self._active.sequence]
        if older:
            sequence, path = older[-1]
            with contextlib.suppress(FileNotFoundError, sqlite3.DatabaseError):
                self._previous = Segment(path, sequence, readonly=True, being_made=False)
        return self._previous

    def _close_previous(self) -> None:
        if self._previous is not None:
            self._previous.close()
            self._previous = None
        self._previous_looked_for = False

    def _should_roll(self, now_us: int) -> bool:
        assert self._active is not None
        if self._snapshot_pending:
            return False
        if now_us // _DAY_US != self._active_day:
            return True
        return segment_bytes_on_disk(self._active.path) >= self.settings.segment_bytes

    # --- retention ------------------------------------------------------------------------

    def apply_retention(self) -> list[Path]:
        """Delete closed segments older than the age bound, then the oldest beyond the size
        bound. The active segment is never deleted. Returns the segments deleted."""
        assert self._active is not None
        now = self._clock()
        closed = [(s, p) for s, p in list_segments(self.directory) if s != self._active.sequence]
        deleted: list[Path] = []
        sizes = {p: segment_bytes_on_disk(p) for _, p in closed}
        total = sum(sizes.values()) + segment_bytes_on_disk(self._active.path)
        for _, path in closed:  # oldest first
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age > self.settings.max_age_s or total > self.settings.max_bytes:
                if not self._set_aside_unless_file(path):
                    self._delete(path)
                total -= sizes[path]
                deleted.append(path)
        # Quarantined segments are kept for a post-mortem, but no longer than the data itself.
        with contextlib.suppress(FileNotFoundError):
            for aside in (self.directory / "quarantine").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if now - aside.stat().st_mtime > self.settings.max_age_s:
                        aside.unlink()
        return deleted

    @staticmethod
    def _delete(path: Path) -> None:
        for suffix in ("", *SIDE_FILES):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def total_bytes(self) -> int:
        return sum(segment_bytes_on_disk(p) for _, p in list_segments(self.directory))

    def oldest_write_s(self) -> float | None:
        """When the oldest segment was last written (what age retention looks at)."""
        segments = list_segments(self.directory)
        if not segments:
            return None
        try:
            return segments[0][1].stat().st_mtime
        except FileNotFoundError:
            return None
