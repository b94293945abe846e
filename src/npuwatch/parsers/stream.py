"""Assembling the lines of one log stream into records.

A record starts at a line with a header (or another known start) and takes every following line
that has none: `<exception_print>` register dumps, JSON dumps, TraceBack chains, raw protobuf
bytes. A record is bounded by a line count and a byte size; what goes beyond starts a new record
flagged `split`, so nothing is dropped. The last record is held until the next start or until
`flush()` (the end of a file, or an idle timeout in the agent).

Lossless: the `original` texts of the records, joined by newlines, give back the decoded input.

This is the per-line hot path. A chunk is decoded in one call when it is clean UTF-8 (the common
case), the strict CANN header is tried before anything else, and a record's body fields are left
for first access (see `Record`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from npuwatch.parsers.codes import find_error_codes, find_framework_code, find_runtime_codes
from npuwatch.parsers.decoding import cut_line, decode_line
from npuwatch.parsers.first_pass import scan_chunk
from npuwatch.parsers.lines import classify_slow, record_from_prefix
from npuwatch.parsers.paths import describe_path
from npuwatch.parsers.process_device import ProcessDevices
from npuwatch.parsers.slog import SlogRecord
from npuwatch.parsers.timestamps import LocalClock, year_of
from npuwatch.records import BatchIndex, Flag, Record
from npuwatch.vocabulary import QUIET_LEVELS

_LINES_A_PASS = 65_536
"""Lines the first pass turns into items at a time (a few MiB of items at most)."""


@dataclass(frozen=True)
class ParseLimits:
    """Bounds that keep one bad line or one endless dump from taking all memory."""

    max_line_bytes: int = 64 * 1024
    """Longer lines are cut and flagged `truncated` (CANN itself never writes more than 1 KiB)."""
    max_record_lines: int = 1000
    """A multi-line record holds at most this many lines; the rest starts a `split` record."""
    max_record_bytes: int = 1024 * 1024
    """A multi-line record holds at most this many bytes of text."""


class StreamParser:
    """Parses the bytes of one log stream (a file, or standard input) into records.

    Feed it complete lines with `feed()`, in order; call `flush()` at the end of the stream (or
    when it has been idle) to get the record still being assembled.
    """

    def __init__(
        self,
        clock: LocalClock,
        path: str | None = None,
        host: str | None = None,
        limits: ParseLimits | None = None,
        reference_us: int | None = None,
        batch_index: bool = False,
    ) -> None:
        """`reference_us` (for example the file's modification time) supplies the year for
        dates printed without one (c10, vLLM, syslog) until the stream itself gives one.
        `batch_index` asks for `last_batch` after each feed, for the rule engine."""
        self._clock = clock
        self._limits = limits or ParseLimits()
        self.source = describe_path(path, clock, host)
        self._current: Record | None = None
        self._batch_index = batch_index
        self.last_batch = BatchIndex([], [], [])
        """Levels, modules and flagged positions of the records the last feed() or flush()
        returned."""
        self._extra: list[str] = []
        self._extra_bytes = 0
        self._devices = ProcessDevices()
        self._last_timestamp: int | None = None
        self._last_pre_sync = 0
        known = self.source.created_us if self.source.created_us is not None else reference_us
        self._year = year_of(known) if known is not None else None

    def feed(self, data: bytes, offset: int = 0) -> list[Record]:
        """Parse `data`, which starts at byte `offset` of the stream and ends at a line end
        (or at the end of the stream). Returns the records completed by it."""
        done: list[Record] = []
        if not data:
            self.last_batch = BatchIndex([], [], [])
            return done
        clock = self._clock
        # The loop keeps its state in locals and writes it back at the end: attribute access
        # per line is a measurable share of the parse on a slow interpreter.
        quiet = QUIET_LEVELS
        append = done.append
        levels: list[str | None] = []
        add_level = levels.append
        loggers: list[str | None] = []
        add_logger = loggers.append
        flagged: list[int] = []
        indexing = self._batch_index
        devices = self._devices
        current = self._current
        last_timestamp = self._last_timestamp
        last_pre_sync = self._last_pre_sync
        first = 0
        while first < len(data):
            # At most _LINES_A_PASS items at a time: a chunk of empty lines would otherwise be
            # an item (a tuple and two ints) per byte, 130 bytes of memory each.
            items = scan_chunk(
                data,
                offset,
                SlogRecord,
                clock.minutes,
                clock.slog_minute_us,
                self._limits.max_line_bytes,
                self.source,
                first,
                _LINES_A_PASS,
            )
            if not items:
                break
            last = items[-1]
            end = last[2] if isinstance(last, tuple) else last.end_offset
            first = len(data) if end is None else end - offset
            for item in items:
                if item.__class__ is tuple:
                    self._current = current
                    other = self._other_line(item, data, offset)
                    if other is None:
                        continue
                    record: Record = other
                else:
                    record = item  # type: ignore[assignment]
                if current is not None:
                    level = current.level
                    if current.source is None or self._extra or level not in quiet:
                        current = self._finish(current)
                    elif current.logger == "HCCL" and devices.learn(current):
                        self._file_device()
                    if indexing:
                        if current.flags:
                            flagged.append(len(done))
                        add_level(level)
                        add_logger(current.logger)
                    append(current)
                timestamp = record.timestamp_us
                if timestamp is None:
                    # A record whose own date is impossible (30 February) keeps no time at all.
                    if last_timestamp is not None and not record.flags & Flag.VALUE_OUT_OF_RANGE:
                        record.timestamp_us = last_timestamp
                        record.flags |= Flag.TIMESTAMP_INFERRED | last_pre_sync
                else:
                    if self._year is None:
                        self._year = year_of(timestamp)
                    last_timestamp = timestamp
                    last_pre_sync = record.flags & Flag.PRE_CLOCK_SYNC
                current = record
            del items
        self._current = current
        self._last_timestamp = last_timestamp
        self._last_pre_sync = last_pre_sync
        if indexing:
            self.last_batch = BatchIndex(levels, flagged, loggers)
        return done

    @property
    def pending_offset(self) -> int | None:
        """Where the record still being assembled starts, or None when there is none: the bytes
        from here on are in no record returned yet (what a checkpoint may not pass)."""
        return self._current.offset if self._current is not None else None

    def stretch_pending(self, fed_end: int, real_end: int) -> None:
        """The last line fed, ending at `fed_end`, really ended at `real_end`: the reader cut it
        at the line cap and skipped the rest. The record being assembled, if that line is its
        last, ends where the line does."""
        current = self._current
        if current is not None and current.end_offset == fed_end:
            current.end_offset = real_end

    def flush(self) -> list[Record]:
        """End the stream (or an idle pause): return the record still being assembled."""
        if self._current is None:
            self.last_batch = BatchIndex([], [], [])
            return []
        record = self._finish(self._current)
        self._current = None
        self.last_batch = BatchIndex([record.level], [0] if record.flags else [], [record.logger])
        return [record]

    def _other_line(
        self, item: tuple[str | None, int, int], data: bytes, offset: int
    ) -> Record | None:
        """A line the first pass left: start a record with it, or join it to the current one."""
        text, start, end = item
        flags = 0
        encoding = None
        if text is None:
            raw = data[start - offset : end - offset]
            if raw[-1:] == b"\n":
                raw = raw[:-1]
            if len(raw) > self._limits.max_line_bytes:
                raw = cut_line(raw, self._limits.max_line_bytes)
                flags = Flag.TRUNCATED
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text, encoding = decode_line(raw)
                flags |= Flag.INVALID_ENCODING
        parse_text = text[:-1] if text[-1:] == "\r" else text
        record, prefix = classify_slow(parse_text, self._clock, self._year)
        if record is None:
            if self._join(text, end, flags, encoding):
                return None
            if prefix is not None and prefix.level is not None:
                # A framework-prefixed line with nothing to continue: the prefix is its structure.
                record = record_from_prefix(parse_text, prefix, self._clock, self._year)
            else:
                record = Record(parse_text, "unparsed")
                record.message = parse_text
                record.flags = Flag.UNPARSED | (Flag.SPLIT if self._current is not None else 0)
        if parse_text is not text:
            record.original = text
        if flags:
            record.flags |= flags
            record.encoding = encoding
        record.offset = start
        record.end_offset = end
        return record

    def _join(self, text: str, end: int, flags: int, encoding: str | None) -> bool:
        """Add a line without a header to the current record, within the record's bounds."""
        current = self._current
        if current is None:
            return False
        limits = self._limits
        if (
            len(self._extra) + 1 >= limits.max_record_lines
            or len(current.original) + self._extra_bytes + len(text) >= limits.max_record_bytes
        ):
            return False
        self._extra.append(text)
        self._extra_bytes += len(text) + 1
        current.end_offset = end
        if flags:
            current.flags |= flags
            current.encoding = encoding or current.encoding
        return True

    def _file_device(self) -> None:
        """The device of the file's own process (the pid in its name), once it names it: every
        record read after has it from the file, as a device log's records have theirs."""
        source = self.source
        if source.device is None and source.pid is not None:
            device = self._devices.of(source.pid)
            if device is not None:
                self.source = dataclasses.replace(source, device=device)

    def _finish(self, record: Record) -> Record:
        extra = self._extra
        if extra:
            record.original = record.original + "\n" + "\n".join(extra)
            continuation = "\n".join(line.rstrip("\r") for line in extra)
            if "body" in record.__dict__:
                record.continuation = continuation
            else:
                record.message = record.message + "\n" + continuation
                kept = record.__dict__.get("_text")
                if kept is not None:  # `text` as it was before the body was split, continued
                    record.__dict__["_text"] = kept + "\n" + continuation
            record.line_count = len(extra) + 1
            self._extra = []
            self._extra_bytes = 0
        text = record.text
        if extra or record.source is None:
            codes = find_error_codes(text)
            preset = record.error_codes
            if preset:  # the code a console block (or the first line) starts with comes first
                codes = preset + [code for code in codes if code not in preset]
            if codes:
                record.error_codes = codes
        if record.level not in QUIET_LEVELS:
            runtime_codes = find_runtime_codes(text)
            if runtime_codes:
                record.runtime_codes = runtime_codes
            if record.framework_code is None and "ERR" in text:
                record.framework_code = find_framework_code(text)
        if record.error_codes or record.runtime_codes or record.framework_code is not None:
            record.flags |= Flag.HAS_CODES
        if record.format != "slog":
            record.flags |= Flag.OTHER_FORMAT
        record.source = self.source
        if record.logger == "HCCL" and self._devices.learn(record):
            self._file_device()
        if record.level not in QUIET_LEVELS:
            self._devices.give(record)
        return record


def parse_bytes(
    data: bytes,
    clock: LocalClock,
    path: str | None = None,
    host: str | None = None,
    limits: ParseLimits | None = None,
) -> list[Record]:
    """Parse a whole stream held in memory into records."""
    parser = StreamParser(clock, path=path, host=host, limits=limits)
    records = parser.feed(data)
    records.extend(parser.flush())
    return records


def iter_records(
    chunks: Iterable[bytes],
    clock: LocalClock,
    path: str | None = None,
    host: str | None = None,
    limits: ParseLimits | None = None,
    reference_us: int | None = None,
) -> Iterator[Record]:
    """Parse a stream given as chunks that each end at a line end (the last one may not)."""
    parser = StreamParser(clock, path=path, host=host, limits=limits, reference_us=reference_us)
    offset = 0
    for chunk in chunks:
        yield from parser.feed(chunk, offset)
        offset += len(chunk)
    yield from parser.flush()
