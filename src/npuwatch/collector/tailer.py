"""Following every log file under the roots: discovery, reading, idle work, and files that go.

The truth is the stored offset and the file's identity, never an event: file events (inotify via
watchdog) only say "look here soon", and a periodic rescan finds whatever they missed. Files are
read oldest first. Open descriptors are bounded; a file closed to stay within the bound is
reopened by identity, and a file held open keeps its bytes readable even after CANN deletes it,
which is how the agent reads a rotated-away plog to its end.

Everything read goes out through `emit` in file order, each batch with the checkpoint it reaches;
`emit` blocks while the pipeline is full (backpressure), and raises `StopReading` at shutdown.
What is lost, and what is skipped, is said by a `SourceReport`.
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
from npuwatch.collector.empty_files import EmptyFile, EmptyFiles
from npuwatch.collector.file_events import FileEvents, Missing
from npuwatch.collector.files import year_reference_of_fd
from npuwatch.collector.identity import FileIdentity, holds_tail, identify, still_same
from npuwatch.collector.resume import resume
from npuwatch.collector.rotation import family_of
from npuwatch.collector.source_report import SourceReport
from npuwatch.collector.tailed_file import ReadBatch, TailedFile, shown_path
from npuwatch.handoff import Checkpoint
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.stream import ParseLimits
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.tree_walk import NO_LINKS, LinkPolicy
from npuwatch.untrusted_files import open_file

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
        links: LinkPolicy = NO_LINKS,
    ) -> None:
        self.roots = list(roots)
        self.wanted = wanted
        self.links = links
        self.settings = settings
        self._clock = clock
        self._emit = emit
        self._metrics = metrics
        self._monotonic = monotonic
        self._wall = wall
        self.files: dict[tuple[int, int], TailedFile] = {}
        self._open: dict[tuple[int, int], TailedFile] = {}
        """Open files, least recently used first (dicts keep insertion order)."""
        self._empty = EmptyFiles()
        self._closed_behind: dict[tuple[int, int], TailedFile] = {}
        """Closed files seen to have grown (or shrunk) since they were last read."""
        self._closed_holding: dict[tuple[int, int], TailedFile] = {}
        """Closed files with bytes read that are in no record yet (an idle flush is due)."""
        self._stored = {(c.device, c.inode): c for c in checkpoints}
        """Checkpoints from the journal not yet matched to a file found on disk."""
        self._report = SourceReport(metrics)
        self.events = FileEvents()
        """Where the watcher's file events go."""
        self._families: dict[str, list[tuple[int, tuple[int, int]]]] = {}
        """CANN logs followed, by process log (folder and name before the stamp): their stamps
        and keys."""
        self._rotated: set[tuple[int, int]] = set()
        """Files deleted, renamed, or followed by the next file of their process, not yet read
        to their end (see `_finish_rotated`)."""
        self._dropped: set[str] = set()
        """Files whose batch was dropped by a stop (see `flush_assembled`)."""

    # --- finding files ----------------------------------------------------------------------

    def rescan(self) -> None:
        """Walk the roots: follow new files, notice renamed and vanished ones."""
        found = discover(self.roots, self.wanted, self.links)
        for problem in found.problems:
            self._report.problem(problem.path, problem.problem, problem.reason)
        self._follow_grown()
        seen: set[tuple[int, int]] = set()
        for item in found.files:
            seen.add((item.status.st_dev, item.status.st_ino))
            self._see(item.path, item.status)
        self._empty.keep_only(seen)
        for key, tailed in list(self.files.items()):
            if key not in seen:
                self._vanished(tailed)
        gone: list[tuple[str, int]] = []
        for key, checkpoint in list(self._stored.items()):
            if key not in seen and Path(checkpoint.path).parent.is_dir():
                # Deleted while the agent was stopped; a missing folder may be an unmounted
                # file system, so its checkpoints wait. It may have grown after the checkpoint.
                del self._stored[key]
                unread = checkpoint.size - checkpoint.offset
                gone.append((checkpoint.path, unread))
                self._emit(FileGone(checkpoint.file_key, checkpoint.path, max(unread, 0)))
        self._report.gone_while_stopped(gone)
        self._update_gauges()

    def _take_hints(self) -> None:
        for path in self.events.take(self._is_wanted):
            try:
                status = os.lstat(path)
            except FileNotFoundError:
                self._not_there(path)
                continue
            except OSError as error:  # a folder that cannot be entered
                if self._is_wanted(path):
                    self.events.resolved(path)
                    self._report.problem(path, error.strerror or str(error))
                continue
            # A link is the rescan's to judge (tree_walk's rule), never followed from a hint.
            if self._is_wanted(path) and stat.S_ISREG(status.st_mode):
                self._see(path, status)
            else:
                self.events.resolved(path)
        self._missing_overdue()

    def _missing_overdue(self) -> None:
        """Files gone before they were followed, and not renamed: lost."""
        for path, missing in self.events.overdue(self._monotonic()):
            if missing.inode is not None and (
                missing.inode in self.files or missing.inode in self._empty
            ):
                continue  # followed under another name
            self._gone("", path, missing.size, exact=False)

    def _not_there(self, path: str) -> None:
        """A file event named a path that no longer exists."""
        tailed = next((t for t in self.files.values() if t.path == path), None)
        if tailed is not None:
            self._vanished(tailed)
        elif self._empty.holds_path(path):
            pass  # held open: the next round sees whether it grew before it went
        elif self.events.is_unresolved(path):
            if Path(path).is_symlink():
                self.events.resolved(path)
                self._report.problem(path, "a link to nothing")
            else:  # came and went between two looks, or renamed (an event may still say so)
                self.events.went_missing(path, Missing(self._monotonic()))

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
            if not self._empty.renamed(key, path) and not self._empty.is_let_go(key, status):
                self._follow(path, status)
            return
        if tailed.path != path:  # renamed: the same file under another name
            tailed.path = path
            self._rotated.add(key)
        tailed.deleted_at = None  # here it is, after an event said its old name was gone
        if status.st_size != tailed.size or status.st_mtime != tailed.mtime:
            tailed.size = status.st_size
            tailed.mtime = status.st_mtime
            if tailed.fd is None and tailed.size != tailed.position:
                self._closed_behind[key] = tailed

    def _follow(self, path: str, status: os.stat_result) -> None:
        try:
            fd = open_file(path)
        except FileNotFoundError:  # deleted since it was listed, or renamed
            if self.events.is_unresolved(path) or status.st_size > 0:
                key = (status.st_dev, status.st_ino)
                missing = Missing(self._monotonic(), key, status.st_size or None)
                self.events.went_missing(path, missing)
            return
        except OSError as error:
            self._report.problem(path, error.strerror or str(error))
            return
        try:
            opened = os.fstat(fd)
        except OSError:
            opened = None
        if opened is None or (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):
            os.close(fd)  # another file at this path since it was listed: the next look sees it
            return
        self.events.resolved(path)
        self._start(path, fd)

    def _start(self, path: str, fd: int, previous: FileIdentity | None = None) -> None:
        """Follow the open file `fd` (held from here on, or closed on an error): from its stored
        checkpoint when it is the file that was read, else from its start. `previous`: the
        identity of what the file held before it was written again in place."""
        try:
            status = os.fstat(fd)
            identity = identify(fd, status, self.settings.fingerprint_bytes)
            if identity is None:  # empty: nothing to tell it by yet; held until it has a byte
                self._make_room()
                self._empty.hold(
                    (status.st_dev, status.st_ino),
                    EmptyFile(path, fd, self._monotonic(), previous),
                )
                return
            start = journal_from = 0
            stored = self._stored.pop(identity.inode_key, None)
            if stored is not None:
                identity, start, journal_from = self._resume(fd, status, identity, stored)
            elif previous is not None and _same_start(identity, previous):
                identity = previous.successor()
        except OSError as error:
            os.close(fd)
            self._report.problem(path, error.strerror or str(error))
            return
        tailed = TailedFile(
            path, identity, self._clock, self.settings.limits, self.settings.host,
            start=start, journal_from=journal_from, mark_bytes=self.settings.fingerprint_bytes,
            # the year of the dates printed without one (c10, vLLM, syslog), as scan takes it
            created_us=year_reference_of_fd(fd, status.st_mtime_ns // 1000),
        )  # fmt: skip
        tailed.size, tailed.mtime = status.st_size, status.st_mtime
        tailed.last_growth = self._monotonic()
        self.files[identity.inode_key] = tailed
        self._hold(tailed, fd)
        self._note_rotation(path, identity.inode_key)

    def _note_rotation(self, path: str, key: tuple[int, int]) -> None:
        """A CANN log started: the files before it of the same process are complete
        (collector/rotation.py). Files are kept by family, so that a first walk of 10,000 files
        costs one look each, not one per pair."""
        family = family_of(path)
        if family is None:
            return
        name, stamp = family
        known = [(s, k) for s, k in self._families.get(name, ()) if k in self.files and k != key]
        self._rotated.update(k for s, k in known if s < stamp)
        self._families[name] = [*known, (stamp, key)]

    def _resume(
        self, fd: int, status: os.stat_result, identity: FileIdentity, stored: Checkpoint
    ) -> tuple[FileIdentity, int, int]:
        """(identity, where to start reading, where the journal ends) for a file found at the
        inode of a checkpoint."""
        resumed = resume(fd, status, identity, stored)
        if resumed.same_start:
            log.info(
                "%s starts like the file read before at its inode but does not hold what was "
                "read of it: reading it as a new file",
                shown_path(stored.path),
            )
        if resumed.replaced:
            self._gone(stored.file_key, stored.path, stored.size - stored.offset, exact=False)
        return resumed.identity, resumed.start, resumed.journal_from

    def _follow_grown(self) -> None:
        """Follow the empty files that have their first bytes now."""
        for empty, _ in self._empty.grown():
            self._start(empty.path, empty.fd, empty.previous)

    # --- descriptors ----------------------------------------------------------------------

    def _open_fd(self, path: str) -> int | None:
        try:
            return open_file(path)
        except FileNotFoundError:
            return None
        except OSError as error:
            self._report.problem(path, error.strerror or str(error))
            return None

    def _make_room(self) -> None:
        """Close descriptors until one more fits the bound: empty files first (a rescan finds
        them again), then the least recently used open file."""
        while len(self._open) + len(self._empty) >= self.settings.max_open_files:
            if self._empty.take_oldest() is None:
                self._close(next(iter(self._open.values())))

    def _hold(self, tailed: TailedFile, fd: int) -> None:
        self._make_room()
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
        """Open a followed file again by its identity; False when its path holds another, or
        the same file written again (then it is read again from its start)."""
        fd = self._open_fd(tailed.path)
        if fd is not None:
            try:
                same = still_same(fd, os.fstat(fd), tailed.identity)
            except OSError:
                same = False
            if same:
                self._hold(tailed, fd)
                if holds_tail(fd, tailed.tail, tailed.fed):
                    return True
                self._truncated(tailed)  # the same first bytes, but not what was read
                return False
            os.close(fd)
        self._vanished(tailed)
        return False

    # --- reading ----------------------------------------------------------------------------

    def poll(self) -> int:
        """One round: take file events, read what files gained. The bytes read."""
        self._take_hints()
        self._follow_grown()
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
        self._finish_rotated()
        self._update_gauges()
        return read

    def _finish_rotated(self) -> None:
        """Hand on at once the last record of a file read to its end that was deleted, renamed
        or followed by the next file of its process (rotated): its writer has moved on, and
        waiting for the idle flush left the record uncommitted for seconds, lost to a `kill -9`
        when the file was gone by the restart. A deleted file is finished; the others keep
        being followed."""
        for key in list(self._rotated):
            tailed = self.files.get(key)
            if tailed is not None and tailed.unread != 0:
                continue  # read to its end first: the record may go on in what is unread
            self._rotated.discard(key)
            if tailed is None:
                continue
            if tailed.deleted_at is not None:
                self._finish(tailed)
                continue
            batch = tailed.flush_assembled()
            if batch is not None:
                self._send(batch)
                if not tailed.holds_data:  # no partial line left for the idle flush
                    self._closed_holding.pop(key, None)

    def _refresh(self, tailed: TailedFile) -> None:
        assert tailed.fd is not None
        try:
            status = os.fstat(tailed.fd)
        except OSError:
            return
        if status.st_nlink == 0 and tailed.deleted_at is None:
            tailed.deleted_at = self._monotonic()
            self._rotated.add(tailed.identity.inode_key)
        tailed.size, tailed.mtime = status.st_size, status.st_mtime

    def _read_round(self, tailed: TailedFile) -> int:
        """Read what `tailed` gained, up to the round's budget; the bytes read (a truncated
        file, read again from its start, counts as one)."""
        fd = tailed.fd
        assert fd is not None
        try:
            rewritten = (
                tailed.size < tailed.position
                or not still_same(fd, os.fstat(fd), tailed.identity)
                or not holds_tail(fd, tailed.tail, tailed.fed)
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
                self._report.problem(tailed.path, error.strerror or str(error))
                self._close(tailed)
                break
            if batch is None:
                tailed.size = tailed.position  # it shrank under us; the next round will see it
                break
            budget -= batch.bytes_read
            tailed.last_growth = self._monotonic()
            self._metrics.bytes_read.inc(batch.bytes_read)
            self._metrics.lines_read.inc(batch.lines_read)
            self._send(batch)
        return self.settings.round_bytes - budget

    def _truncated(self, tailed: TailedFile) -> None:
        """Truncated, or written again in place: finish the old content, read the new."""
        fd = tailed.fd
        assert fd is not None
        log.info("%s was truncated or written again; reading it again from the start", tailed.shown)
        self._send(tailed.flush_idle(end_of_stream=True))
        self._gone(tailed.key, tailed.shown, 0)
        tailed.fd = None
        self._open.pop(tailed.identity.inode_key, None)
        del self.files[tailed.identity.inode_key]
        self._start(tailed.path, fd, previous=tailed.identity)

    def _send(self, batch: ReadBatch) -> None:
        try:
            self._emit(batch)
        except StopReading:
            self._dropped.add(batch.file_key)
            raise

    def flush_assembled(self, emit: Emit) -> None:
        """Stopping: hand every record being assembled to `emit`, so that a file CANN deletes
        before the next start loses no complete line (a partial line is read again then). Not
        for a file whose batch the stop dropped: its record would skip that batch's."""
        for tailed in [*self._open.values(), *self._closed_holding.values()]:
            if tailed.key in self._dropped:
                continue
            batch = tailed.flush_assembled()
            if batch is not None:
                emit(batch)

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
                if tailed.fd is not None and self._grown_meanwhile(tailed, now):
                    continue
                self._send(tailed.flush_idle())
                if tailed.fd is None:
                    self._closed_holding.pop(tailed.identity.inode_key, None)
            if tailed.fd is not None and idle >= settings.idle_close_s and not tailed.holds_data:
                self._close(tailed)
        self._empty.close_idle(now, settings.idle_close_s)
        self._update_gauges()

    def _grown_meanwhile(self, tailed: TailedFile, now: float) -> bool:
        """Whether a file that looks idle has grown since its size was last asked: its last
        growth is when it was last read, and the reader may have waited for room in the
        pipeline since (a flood), while the writer went on. Then it is not idle: flushing would
        cut its last line in two."""
        size = tailed.size
        self._refresh(tailed)
        if tailed.size == size:
            return False
        tailed.last_growth = now
        return True

    def _vanished(self, tailed: TailedFile) -> None:
        """The file is no longer under its path: read it to its end while it is still open."""
        if tailed.fd is not None:
            self._refresh(tailed)
            if tailed.deleted_at is None:
                tailed.deleted_at = self._monotonic()  # renamed out of the roots, or excluded
                self._rotated.add(tailed.identity.inode_key)
            return
        self._finish(tailed)

    def _finish(self, tailed: TailedFile) -> None:
        if tailed.holds_data:
            self._send(tailed.flush_idle(end_of_stream=True))
        held = tailed.fd is not None
        if held:
            self._refresh(tailed)  # its final size: the unread count is exact
        unread = tailed.unread
        self._close(tailed)
        self.files.pop(tailed.identity.inode_key, None)
        self._closed_holding.pop(tailed.identity.inode_key, None)
        self._closed_behind.pop(tailed.identity.inode_key, None)
        self._gone(tailed.key, tailed.shown, unread, exact=held)

    def _gone(self, key: str, path: str, unread: int | None, exact: bool = True) -> None:
        """A file is finished: its losses said (see SourceReport.lost), its checkpoint dropped."""
        self._report.lost(path, unread, exact)
        if key:
            self._emit(FileGone(key, path, max(unread or 0, 0)))

    def _update_gauges(self) -> None:
        self._metrics.files_followed.set(len(self.files))
        self._metrics.files_open.set(len(self._open) + len(self._empty))

    def close(self) -> None:
        for tailed in list(self._open.values()):
            self._close(tailed)
        self._empty.close()

    def state(self) -> Mapping[tuple[int, int], TailedFile]:
        return self.files


def _same_start(identity: FileIdentity, previous: FileIdentity) -> bool:
    """Whether two identities would give the same key (same inode, same first bytes)."""
    return (identity.inode_key, identity.fingerprint_length, identity.fingerprint) == (
        previous.inode_key,
        previous.fingerprint_length,
        previous.fingerprint,
    )
