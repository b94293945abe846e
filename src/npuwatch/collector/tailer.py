"""Following every log file under the roots: discovery, reading, idle work, and files that go.

The truth is the stored offset and the file's identity, never an event: file events (inotify via
watchdog) only say "look here soon", and a periodic rescan finds whatever they missed. Files are
read oldest first. Open descriptors are bounded; a file closed to stay within the bound is
reopened by identity, and a file held open keeps its bytes readable even after CANN deletes it,
which is how the agent reads a rotated-away plog to its end.

Everything read goes out through `emit` in file order, each batch with the checkpoint it reaches;
`emit` blocks while the pipeline is full (backpressure), and raises `StopReading` at shutdown.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.collector.discovery import FileFilter, discover
from npuwatch.collector.identity import FileIdentity, identify, still_same
from npuwatch.collector.tailed_file import ReadBatch, TailedFile
from npuwatch.journal.segment import Checkpoint
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers import LocalClock
from npuwatch.parsers.stream import ParseLimits

log = logging.getLogger(__name__)


class StopReading(Exception):
    """Raised by `emit` when the agent is stopping: the batch in hand is dropped, which is safe
    because its checkpoint travels with it and so is never committed."""


@dataclass(frozen=True)
class TailSettings:
    read_chunk_bytes: int = 1024 * 1024
    max_open_files: int = 256
    idle_flush_s: float = 5.0
    idle_close_s: float = 60.0
    deleted_grace_s: float = 30.0
    fingerprint_bytes: int = 256
    round_bytes: int = 8 * 1024 * 1024
    """At most this much is read from one file per round, so that one flood starves no other."""
    limits: ParseLimits = field(default_factory=ParseLimits)
    host: str | None = None


@dataclass(frozen=True)
class FileGone:
    """A followed file is finished or gone: its checkpoint is dropped after its last batch."""

    file_key: str
    path: str
    unread_bytes: int


Emit = Callable[[ReadBatch | FileGone], None]


class FileTailer:
    """Follows the files under `roots` and emits what they gain."""

    def __init__(
        self,
        roots: Sequence[Path],
        wanted: FileFilter,
        settings: TailSettings,
        clock: LocalClock,
        checkpoints: Iterable[Checkpoint],
        emit: Emit,
        metrics: SelfMetrics,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.roots = list(roots)
        self.wanted = wanted
        self.settings = settings
        self._clock = clock
        self._emit = emit
        self._metrics = metrics
        self._monotonic = monotonic
        self._wall = wall
        self.files: dict[tuple[int, int], TailedFile] = {}
        self._open: dict[tuple[int, int], TailedFile] = {}
        """Open files, least recently used first (dicts keep insertion order)."""
        self._closed_behind: dict[tuple[int, int], TailedFile] = {}
        """Closed files seen to have grown (or shrunk) since they were last read."""
        self._closed_holding: dict[tuple[int, int], TailedFile] = {}
        """Closed files with bytes read that are in no record yet (an idle flush is due)."""
        self._stored = {(c.device, c.inode): c for c in checkpoints}
        """Checkpoints from the journal not yet matched to a file found on disk."""
        self._reported: set[tuple[str, str]] = set()
        self._hints: set[str] = set()
        self._created: set[str] = set()
        self._unresolved: set[str] = set()
        """Paths a file event said were created, not yet followed: if one is gone before it
        could be, its data is lost, and that is counted."""

    # --- finding files ----------------------------------------------------------------------

    def rescan(self) -> None:
        """Walk the roots: follow new files, notice renamed and vanished ones."""
        found = discover(self.roots, self.wanted)
        for path, problem in found.problems:
            self._problem(path, problem)
        seen: set[tuple[int, int]] = set()
        for item in found.files:
            seen.add((item.status.st_dev, item.status.st_ino))
            self._see(item.path, item.status)
        for key, tailed in list(self.files.items()):
            if key not in seen:
                self._vanished(tailed)
        for key, checkpoint in list(self._stored.items()):
            if key not in seen and Path(checkpoint.path).parent.is_dir():
                # Deleted while the agent was stopped; a missing folder may be an unmounted
                # file system, so its checkpoints wait.
                del self._stored[key]
                self._gone(
                    checkpoint.file_key, checkpoint.path, checkpoint.size - checkpoint.offset
                )
        self._update_gauges()

    def hint(self, path: str, created: bool = False) -> None:
        """A file event: look at `path` at the next round (called from the watcher thread)."""
        self._hints.add(path)
        if created:
            self._created.add(path)

    def _take_hints(self) -> None:
        hints, self._hints = self._hints, set()
        created, self._created = self._created, set()
        self._unresolved.update(path for path in created if self._is_wanted(path))
        for path in hints:
            try:
                status = Path(path).stat()
            except OSError:
                tailed = next((t for t in self.files.values() if t.path == path), None)
                if tailed is not None:
                    self._vanished(tailed)
                elif path in self._unresolved:
                    self._unresolved.discard(path)
                    self._gone("", path, 0, unread_file=True)  # came and went unread
                continue
            if self._is_wanted(path) and stat.S_ISREG(status.st_mode):
                self._see(path, status)

    def _is_wanted(self, path: str) -> bool:
        for root in self.roots:
            try:
                relative = os.path.relpath(path, root)
            except ValueError:
                continue
            if not relative.startswith(".."):
                return self.wanted.wants(Path(path).name, relative)
        return False

    def _see(self, path: str, status: os.stat_result) -> None:
        key = (status.st_dev, status.st_ino)
        tailed = self.files.get(key)
        if tailed is None:
            self._follow(path, status)
            return
        tailed.path = path  # renamed: the same file under another name
        if status.st_size != tailed.size or status.st_mtime != tailed.mtime:
            tailed.size = status.st_size
            tailed.mtime = status.st_mtime
            if tailed.fd is None and tailed.size != tailed.position:
                self._closed_behind[key] = tailed

    def _follow(self, path: str, status: os.stat_result) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # deleted since it was listed
            if status.st_size > 0 or path in self._unresolved:
                self._unresolved.discard(path)
                self._gone("", path, status.st_size, unread_file=True)
            return
        except OSError as error:
            self._problem(path, error.strerror or str(error))
            return
        try:
            status = os.fstat(fd)
            identity = identify(fd, status, self.settings.fingerprint_bytes)
            if identity is None:  # empty: nothing to tell it by yet; the next look will
                os.close(fd)
                return
            start = journal_from = 0
            stored = self._stored.pop(identity.inode_key, None)
            if stored is not None:
                known = FileIdentity(
                    stored.device, stored.inode, stored.fingerprint_length, stored.fingerprint
                )
                if still_same(fd, status, known):
                    identity, start, journal_from = known, stored.replay_from, stored.offset
                else:  # the inode was reused by another file
                    self._gone(stored.file_key, stored.path, stored.size - stored.offset)
        except OSError as error:
            os.close(fd)
            self._problem(path, error.strerror or str(error))
            return
        tailed = TailedFile(
            path, identity, self._clock, self.settings.limits, self.settings.host,
            start=start, journal_from=journal_from,
        )  # fmt: skip
        tailed.size, tailed.mtime = status.st_size, status.st_mtime
        tailed.last_growth = self._monotonic()
        self.files[identity.inode_key] = tailed
        self._unresolved.discard(path)
        self._hold(tailed, fd)

    # --- descriptors ----------------------------------------------------------------------

    def _open_fd(self, path: str) -> int | None:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as error:
            self._problem(path, error.strerror or str(error))
            return None

    def _hold(self, tailed: TailedFile, fd: int) -> None:
        while len(self._open) >= self.settings.max_open_files:
            self._close(next(iter(self._open.values())))
        tailed.fd = fd
        self._open[tailed.identity.inode_key] = tailed
        self._closed_holding.pop(tailed.identity.inode_key, None)

    def _close(self, tailed: TailedFile) -> None:
        self._open.pop(tailed.identity.inode_key, None)
        if tailed.fd is not None:
            os.close(tailed.fd)
            tailed.fd = None
        tailed.drop_parser()
        key = tailed.identity.inode_key
        if tailed.holds_data:  # closed to bound descriptors, in the middle of a record
            self._closed_holding[key] = tailed
        if tailed.size != tailed.position:  # closed to bound descriptors before it was read
            self._closed_behind[key] = tailed

    def _reopen(self, tailed: TailedFile) -> bool:
        """Open a followed file again by its identity; False when its path holds another."""
        fd = self._open_fd(tailed.path)
        if fd is not None:
            try:
                if still_same(fd, os.fstat(fd), tailed.identity):
                    self._hold(tailed, fd)
                    return True
            except OSError:
                pass
            os.close(fd)
        self._vanished(tailed)
        return False

    # --- reading ----------------------------------------------------------------------------

    def poll(self) -> int:
        """One round: take file events, read what files gained. The bytes read."""
        self._take_hints()
        now_wall = self._wall()
        for tailed in self._open.values():
            self._refresh(tailed)
        # Open files are fstat'ed each round; a closed file's size changes only when a rescan
        # or a file event looks at it, which notes it: the round costs the open files, not all.
        candidates = [*self._open.values(), *self._closed_behind.values()]
        self._closed_behind.clear()
        pending = sorted(
            (t for t in candidates if t.size != t.position),  # grown, or truncated
            key=lambda t: (t.mtime, t.path),
        )
        lag = 0.0
        read = 0
        for tailed in pending:
            if tailed.behind_since is None:
                tailed.behind_since = now_wall
            if tailed.fd is None and not self._reopen(tailed):
                continue
            read += self._read_round(tailed)
            if tailed.unread > 0:
                lag = max(lag, now_wall - tailed.behind_since)
            else:
                tailed.behind_since = None
        self._metrics.read_lag.set(lag)
        self._update_gauges()
        return read

    def _refresh(self, tailed: TailedFile) -> None:
        assert tailed.fd is not None
        try:
            status = os.fstat(tailed.fd)
        except OSError:
            return
        if status.st_nlink == 0 and tailed.deleted_at is None:
            tailed.deleted_at = self._monotonic()
        tailed.size, tailed.mtime = status.st_size, status.st_mtime

    def _read_round(self, tailed: TailedFile) -> int:
        """Read what `tailed` gained, up to the round's budget; the bytes read (a truncated
        file, read again from its start, counts as one)."""
        assert tailed.fd is not None
        try:
            rewritten = tailed.size < tailed.position or not still_same(
                tailed.fd, os.fstat(tailed.fd), tailed.identity
            )
        except OSError:
            rewritten = False
        if rewritten:
            self._truncated(tailed)
            return 1
        budget = self.settings.round_bytes
        while budget > 0 and tailed.unread > 0:
            try:
                batch = tailed.read(min(self.settings.read_chunk_bytes, budget))
            except OSError as error:
                self._problem(tailed.path, error.strerror or str(error))
                self._close(tailed)
                break
            if batch is None:
                tailed.size = tailed.position  # it shrank under us; the next round will see it
                break
            budget -= batch.bytes_read
            tailed.last_growth = self._monotonic()
            self._metrics.bytes_read.inc(batch.bytes_read)
            self._metrics.lines_read.inc(batch.lines_read)
            self._emit(batch)
        return self.settings.round_bytes - budget

    def _truncated(self, tailed: TailedFile) -> None:
        """Truncated (and perhaps written again): finish the old content, read the new."""
        assert tailed.fd is not None
        log.info("%s was truncated; reading it again from the start", tailed.path)
        self._emit(tailed.flush_idle(end_of_stream=True))
        self._gone(tailed.key, tailed.path, 0)
        fd, tailed.fd = tailed.fd, None
        self._open.pop(tailed.identity.inode_key, None)
        del self.files[tailed.identity.inode_key]
        self._follow(tailed.path, os.fstat(fd))
        os.close(fd)

    # --- idle work and files that go -------------------------------------------------------

    def idle_work(self) -> None:
        """Flush files idle with data held, close idle ones, finish deleted ones."""
        now = self._monotonic()
        settings = self.settings
        # Only open files can be deleted-while-open or due to close, and closed ones are
        # due to flush only when they hold data: the rest of a host's 10,000 files are skipped.
        for tailed in [*self._open.values(), *self._closed_holding.values()]:
            idle = now - tailed.last_growth
            if tailed.deleted_at is not None:
                if tailed.unread == 0 or now - tailed.deleted_at > settings.deleted_grace_s:
                    self._finish(tailed)
                continue
            if tailed.holds_data and idle >= settings.idle_flush_s and tailed.unread == 0:
                self._emit(tailed.flush_idle())
                if tailed.fd is None:
                    self._closed_holding.pop(tailed.identity.inode_key, None)
            if tailed.fd is not None and idle >= settings.idle_close_s and not tailed.holds_data:
                self._close(tailed)
        self._update_gauges()

    def _vanished(self, tailed: TailedFile) -> None:
        """The file is no longer under its path: read it to its end while it is still open."""
        if tailed.fd is not None:
            self._refresh(tailed)
            if tailed.deleted_at is None:
                tailed.deleted_at = self._monotonic()  # renamed out of the roots, or excluded
            return
        self._finish(tailed)

    def _finish(self, tailed: TailedFile) -> None:
        if tailed.holds_data:
            self._emit(tailed.flush_idle(end_of_stream=True))
        unread = tailed.unread
        self._close(tailed)
        self.files.pop(tailed.identity.inode_key, None)
        self._closed_holding.pop(tailed.identity.inode_key, None)
        self._closed_behind.pop(tailed.identity.inode_key, None)
        self._gone(tailed.key, tailed.path, unread)

    def _gone(self, key: str, path: str, unread: int, unread_file: bool = False) -> None:
        if unread > 0 or unread_file:
            self._metrics.files_deleted_unread.inc()
            self._metrics.bytes_deleted_unread.inc(max(unread, 0))
            log.warning(
                "%s was deleted before it was read to the end (%d bytes unread)", path, unread
            )
        if key:
            self._emit(FileGone(key, path, max(unread, 0)))

    def _problem(self, path: str, problem: str) -> None:
        if (path, problem) in self._reported:
            return
        self._reported.add((path, problem))
        reason = "not_regular_file" if problem == "not a regular file" else "unreadable"
        self._metrics.source_problems.labels(reason).inc()
        log.warning("skipping %s: %s", path, problem)

    def _update_gauges(self) -> None:
        self._metrics.files_followed.set(len(self.files))
        self._metrics.files_open.set(len(self._open))

    def close(self) -> None:
        for tailed in list(self._open.values()):
            self._close(tailed)

    def state(self) -> Mapping[tuple[int, int], TailedFile]:
        return self.files
