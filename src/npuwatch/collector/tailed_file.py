"""One followed file: what has been read of it, and turning the bytes it gains into records.

Bytes are handed to the parser as whole lines; the bytes after the last line end wait in
`partial` until the line is complete, or until the file has been idle for the flush timeout, when
they are taken as they are (the record is flagged `incomplete`). A line longer than the cap keeps
its first `max_line_bytes` and skips the rest up to its line end, so that memory stays bounded.

The checkpoint offset is where the record still being assembled starts (or, when none is, the
end of the bytes parsed): every byte before it belongs to a record that has been handed on. The
last bytes parsed are kept (a fingerprint's worth) so that a file found again at the same inode
can be asked whether it still holds them (collector.identity.ReadMark).

A file name need not be UTF-8; the name is kept as the operating system gave it, for opening,
and shown (in records, the journal and log lines) with its odd bytes escaped as `\\xNN`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from operator import attrgetter

from npuwatch.collector.identity import FileIdentity, ReadMark, mark_of
from npuwatch.parsers.stream import ParseLimits, StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import BatchIndex, Flag, Record, SourceInfo

_LINE_COUNT = attrgetter("line_count")

NO_MARK = ReadMark()


@dataclass
class ReadBatch:
    """Records read from one file, and how far they reach."""

    file_key: str
    path: str
    source: SourceInfo
    records: list[Record]
    raw: bytes | None
    """The bytes the records were parsed from (for the rule engine's literal search)."""
    hints: BatchIndex | None
    journal_from: int
    """Records starting before this offset are already in the journal: they are replayed to the
    rules only (after a restart that had events waiting for context)."""
    offset: int
    """The checkpoint this batch reaches."""
    size: int
    """The file's size when read."""
    identity: FileIdentity
    bytes_read: int
    lines_read: int
    end_of_stream: bool = False
    """The file is finished (deleted and read to its end, or truncated): close its rule stream."""
    mark: ReadMark = NO_MARK
    """The last bytes parsed: what a restart asks the file at this inode to still hold."""
    first_line: int | None = None
    """The line number of the first record, where the file was read from its start (evidence
    says FILE:LINE); None after a start from a checkpoint inside the file (FILE (byte N))."""


def shown_path(path: str) -> str:
    """`path` as text that can be written anywhere: bytes of a name that are not UTF-8 (kept
    by Python as lone surrogates, which SQLite, JSON encoders and terminals refuse) as `\\xNN`."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


class TailedFile:
    """A file being followed; the tailer owns its descriptor and calls `read` and `flush_idle`."""

    def __init__(
        self,
        path: str,
        identity: FileIdentity,
        clock: LocalClock,
        limits: ParseLimits,
        host: str | None,
        start: int = 0,
        journal_from: int = 0,
        created_us: int | None = None,
        mark_bytes: int = 256,
    ) -> None:
        self.path = path
        self.identity = identity
        self.fd: int | None = None
        self.fed = start
        """Bytes up to here were given to the parser."""
        self.partial = b""
        self.skipping = False
        """Inside an over-long line: dropping bytes up to its line end."""
        self.journal_from = journal_from
        self.size = start
        self.mtime = 0.0
        self.last_growth = 0.0
        """Monotonic time the file last grew (or was opened): what idle flush and close use."""
        self.behind_since: float | None = None
        """Wall time unread bytes were first seen (for the read lag), None when caught up."""
        self.deleted_at: float | None = None
        self._clock = clock
        self._limits = limits
        self._host = host
        self._reference_us = created_us
        self._parser: StreamParser | None = None
        self._skipped = 0
        self._raw: list[bytes] = []
        self._mark_bytes = mark_bytes
        self.tail = b""
        """The last bytes given to the parser, ending at `fed` (empty after a skipped stretch
        of an over-long line, and at a start from a checkpoint: not known)."""
        self.next_line: int | None = 1 if start == 0 else None
        """The line number of the next record handed on: counted from the file's start, as
        every line belongs to one record (unknown after a start from a checkpoint)."""

    @property
    def path(self) -> str:
        return self._path

    @path.setter
    def path(self, path: str) -> None:
        self._path = path
        self.shown = shown_path(path)

    @property
    def key(self) -> str:
        return self.identity.key

    @property
    def position(self) -> int:
        """The next byte to read."""
        return self.fed + len(self.partial) + (self._skipped if self.skipping else 0)

    @property
    def unread(self) -> int:
        return max(self.size - self.position, 0)

    @property
    def holds_data(self) -> bool:
        """Whether bytes were read that are in no record yet (a partial line, a record being
        assembled): an idle flush would hand them on."""
        return bool(self.partial) or (
            self._parser is not None and self._parser.pending_offset is not None
        )

    def parser(self) -> StreamParser:
        if self._parser is None:
            self._parser = StreamParser(
                self._clock,
                path=self.shown,
                host=self._host,
                limits=self._limits,
                reference_us=self._reference_us,
                batch_index=True,
            )
        return self._parser

    def drop_parser(self) -> None:
        """Forget the parser (it holds nothing: called when the file is closed while idle)."""
        if not self.holds_data:
            self._parser = None

    def checkpoint_offset(self) -> int:
        pending = self._parser.pending_offset if self._parser is not None else None
        return self.fed if pending is None else pending

    def read(self, chunk_bytes: int) -> ReadBatch | None:
        """Read up to `chunk_bytes` more (the descriptor must be open), parse the whole lines."""
        assert self.fd is not None
        data = os.pread(self.fd, chunk_bytes, self.position)
        if not data:
            return None
        lines = data.count(b"\n")
        read_size = len(data)
        records: list[Record] = []
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                self._skipped += read_size
                return self._batch(records, read_size, lines)
            # The over-long line ends here: its kept start goes on as one line, which the parser
            # cuts to the cap and flags `truncated`; the dropped bytes count as read.
            records = self._feed(self.partial + b"\n")
            fed_end = self.fed
            self.fed += self._skipped + cut
            self._stretch(records, fed_end)
            self.skipping = False
            self._skipped = 0
            self.partial = b""
            self.tail = b""  # the fed line end was put in place of what was skipped
            data = data[cut + 1 :]
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        if cut:
            records.extend(self._feed(data[:cut]))
        rest = data[cut:]
        limit = self._limits.max_line_bytes
        if len(rest) > limit:
            self.partial = rest[: limit + 1]
            self.skipping = True
            self._skipped = len(rest) - len(self.partial)
        else:
            self.partial = rest
        return self._batch(records, read_size, lines)

    def _feed(self, whole: bytes) -> list[Record]:
        records = self.parser().feed(whole, self.fed)
        self.fed += len(whole)
        self._raw.append(whole)
        keep = self._mark_bytes
        self.tail = whole[-keep:] if len(whole) >= keep else (self.tail + whole)[-keep:]
        return records

    def _stretch(self, records: list[Record], fed_end: int) -> None:
        """The over-long line fed up to `fed_end` ends at `fed` (its rest was skipped): so does
        its record, whether handed on already or still being assembled."""
        if records and records[-1].end_offset == fed_end:
            records[-1].end_offset = self.fed
        self.parser().stretch_pending(fed_end, self.fed)

    def _batch(self, records: list[Record], bytes_read: int, lines: int) -> ReadBatch:
        parser = self.parser()
        first_line = self.next_line
        if first_line is not None and records:
            self.next_line = first_line + sum(map(_LINE_COUNT, records))
        raw = self._raw[0] if len(self._raw) == 1 else b"".join(self._raw)
        self._raw = []
        batch = ReadBatch(
            file_key=self.key,
            path=self.shown,
            source=parser.source,
            records=records,
            raw=raw,
            hints=parser.last_batch if len(parser.last_batch.levels) == len(records) else None,
            journal_from=self.journal_from,
            offset=self.checkpoint_offset(),
            size=self.size,
            identity=self.identity,
            bytes_read=bytes_read,
            lines_read=lines,
            mark=mark_of(self.tail, self.fed),
            first_line=first_line,
        )
        if self.journal_from and batch.offset >= self.journal_from:
            self.journal_from = 0
        return batch

    def flush_idle(self, end_of_stream: bool = False) -> ReadBatch:
        """Hand on what is held: the partial line (flagged `incomplete`) and the record being
        assembled. Called when the file has been idle, and when it is finished."""
        parser = self.parser()
        records: list[Record] = []
        incomplete = bool(self.partial)
        if self.partial:
            # Fed where it starts; the dropped rest of an over-long line comes after it.
            records.extend(self._feed(self.partial))
            self.partial = b""
        if self.skipping:
            fed_end = self.fed
            self.fed += self._skipped
            self._stretch(records, fed_end)
            self.skipping = False
            self._skipped = 0
            self.tail = b""
        flushed = parser.flush()
        if incomplete and flushed:
            flushed[-1].flags |= Flag.INCOMPLETE
        records.extend(flushed)
        batch = self._batch(records, 0, 0)
        batch.hints = None  # two parser calls: the engine computes its own
        batch.end_of_stream = end_of_stream
        return batch

    def flush_assembled(self) -> ReadBatch | None:
        """Hand on the record being assembled, whose lines are all complete; a partial line
        stays unread. Called when the agent stops: the file may be gone by the next start (CANN
        rotates while no agent runs), and its last record with it. A line that continues the
        record after the start begins a record of its own."""
        if self._parser is None or self._parser.pending_offset is None:
            return None
        batch = self._batch(self._parser.flush(), 0, 0)
        batch.hints = None
        return batch
