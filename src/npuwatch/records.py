"""The record schema: every field npuwatch writes, named after the Elastic Common Schema.

Two views of one schema:

* `Record`, here, is the plain object the parsers fill on the per-line hot path. Validating a
  pydantic model per line would cost more than parsing the line, so the hot path builds `Record`
  and `Record.to_document()` produces the nested ECS document.
* `record_schema.LogRecord` is the pydantic model of that document: the published contract
  (`npuwatch schema` prints its JSON Schema, the search-engine mappings are generated from it)
  and the validator used at the boundaries and in tests. It lives apart so that what parses
  lines does not pay for building it (pydantic and some twenty models: 0.2 s of every start).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from types import MappingProxyType
from typing import Any, ClassVar, Literal, NamedTuple

from npuwatch.bounded_numbers import OUT_OF_RANGE_FLAG
from npuwatch.vocabulary import ERROR_LEVELS

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

LogKind = Literal[
    "plog", "device", "device-os", "device-app", "event", "firmware", "slogd", "other"
]
"""What wrote the file: host application (plog), device app logs pulled back to the host
(device), the device control CPU (device-os), an app on the device (device-app), fault events
(event), NPU firmware (firmware), the log daemon's own log (slogd), or anything else."""

TelemetryKind = Literal["npu-smi", "profiling"]
"""Entries the agent writes itself rather than reads from a log file: device readings polled
from `npu-smi info`, and operators of an imported profiling run."""

LogChannel = Literal["debug", "run", "security"]
"""CANN's three log channels: debug (level set by ASCEND_GLOBAL_LOG_LEVEL), run and security."""


class Flag:
    """Facts about how a record was read, kept so that nothing odd is silent.

    Plain integer bits (not an enum): they are combined on the per-line hot path.
    """

    UNPARSED = 1
    """No known format matched; the raw text is kept as the message."""
    TRUNCATED = 2
    """A line was longer than the configured cap and was cut."""
    PRE_CLOCK_SYNC = 4
    """The device wrote the record before its clock was synced (a 1970 timestamp)."""
    INVALID_ENCODING = 8
    """The bytes were not UTF-8; they were decoded as GBK or with escapes."""
    TIMESTAMP_INFERRED = 16
    """The line carries no usable time; the time of the record before it was used."""
    SPLIT = 32
    """A multi-line record reached its line or byte bound; this record continues it."""
    INCOMPLETE = 64
    """The file went idle in the middle of this record's last line (no line end yet); the agent
    took the line as it was rather than hold it forever."""
    PREFIXED = 128
    """The record's first line was wrapped: grep output, a rank or worker prefix, a `> ` quote,
    leading blanks (a log pasted into a ticket). The header was read after the wrapping, which
    `event.original` keeps."""
    VALUE_OUT_OF_RANGE = OUT_OF_RANGE_FLAG
    """A number or a date in the record could not be kept: a number too large for 64 bits (a
    pid of 2**63), or a date that does not exist (30 February, hour 25). The field is left
    empty (a record with an impossible date has no time); `event.original` keeps the text."""
    HAS_CODES = 1 << 16
    """Internal, never exported: the record carries error, runtime or framework codes. The rule
    engine tests this one bit to skip the code lookups for the records (nearly all) without."""
    OTHER_FORMAT = 1 << 17
    """Internal, never exported: the record is not a CANN slog record (console, c10, ...)."""

    BY_NAME: ClassVar[dict[str, int]] = {
        "unparsed": UNPARSED,
        "truncated": TRUNCATED,
        "pre_clock_sync": PRE_CLOCK_SYNC,
        "invalid_encoding": INVALID_ENCODING,
        "timestamp_inferred": TIMESTAMP_INFERRED,
        "split": SPLIT,
        "incomplete": INCOMPLETE,
        "prefixed": PREFIXED,
        "value_out_of_range": VALUE_OUT_OF_RANGE,
    }

    @classmethod
    def names(cls, value: int) -> list[str]:
        return [name for name, bit in cls.BY_NAME.items() if value & bit]


FLAG_NAMES = list(Flag.BY_NAME)


def format_timestamp(epoch_us: int) -> str:
    """Format microseconds since the epoch as an ISO 8601 UTC string ending in Z."""
    seconds, micro = divmod(epoch_us, 1_000_000)
    return f"{_iso_second(seconds)}.{micro:06d}Z"


@lru_cache(maxsize=4096)
def _iso_second(epoch_s: int) -> str:
    # Records come in bursts within the same second: shipping formats one time per record.
    return (EPOCH + timedelta(seconds=epoch_s)).isoformat(timespec="seconds")[:-6]


_BODY_FIELDS = frozenset(
    {
        "message",
        "origin_file",
        "origin_line",
        "thread_id",
        "function",
        "submodule",
        "tags",
        "rank",
        "device",
    }
)


class _BodyField:
    """A field derived from a record's body on first access.

    A non-data descriptor: once the value is in the instance dict, Python finds it there and
    never calls this again. (A `__getattr__` on the class would do the same, but it makes every
    attribute access of every record slower, and the rule engine reads a few per record.)
    """

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, record: Record | None, owner: type) -> Any:
        if record is None:
            return self
        record.derive_body_fields()
        return record.__dict__[self.name]


class _MarkedBodyField(_BodyField):
    """A body field that only a body holding its marker (`Record.body_markers`) can carry.

    The rule engine reads a record's rank for every match (it is in each dedupe key) and the
    scan its device for every error: on the bodies without the marker, nearly all, the answer
    is None without parsing the body.
    """

    __slots__ = ()

    def __get__(self, record: Record | None, owner: type) -> Any:
        if record is None:
            return self
        values = record.__dict__
        body = values.get("body")
        if body is not None:
            markers = record.body_markers.get(self.name)
            if markers is not None and not any(marker in body for marker in markers):
                return None
        record.derive_body_fields()
        return values[self.name]


class Record:
    """One log event as the parsers build it: plain attributes, no validation.

    `original` holds the exact text of every physical line of the record, joined by newlines
    (carriage returns kept), so that the originals of all records of a stream, in order, give back
    the stream.

    Two things keep this class cheap enough for the per-line hot path. Optional fields default
    to class attributes, so a record stores only what its line carried. And the fields that come
    from the body of a CANN line (`message`, origin, thread, function, sub-module, tags) are
    derived on first access from `body`, by `body_parser`: counting levels, codes and processes
    over a million lines never pays for them.
    """

    message: str = _BodyField()  # type: ignore[assignment]
    origin_file: str | None = _BodyField()  # type: ignore[assignment]
    origin_line: int | None = _BodyField()  # type: ignore[assignment]
    thread_id: int | None = _BodyField()  # type: ignore[assignment]
    function: str | None = _BodyField()  # type: ignore[assignment]
    submodule: str | None = _BodyField()  # type: ignore[assignment]
    tags: list[str] | None = _BodyField()  # type: ignore[assignment]
    rank: int | None = _MarkedBodyField()  # type: ignore[assignment]
    device: int | None = _MarkedBodyField()  # type: ignore[assignment]

    timestamp_us: int | None = None
    level: str | None = None
    logger: str | None = None
    pid: int | None = None
    process_name: str | None = None
    error_codes: list[str] = []  # noqa: RUF012 - replaced, never mutated in place
    runtime_codes: list[int] = []  # noqa: RUF012 - replaced, never mutated in place
    framework_code: str | None = None
    flags: int = 0
    encoding: str | None = None
    line_count: int = 1
    offset: int | None = None
    end_offset: int | None = None
    source: SourceInfo | None = None
    body: str | None = None
    """The text after a CANN header, not yet split into body fields."""
    continuation: str | None = None
    """Lines after the first, joined by newlines (carriage returns removed)."""
    body_parser: Callable[[Record, str], None] | None = None
    body_markers: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """For a body field the body parser finds only after a fixed text (`rank`, `device`): that
    text. A body without it leaves the field None, which is read without parsing the body."""
    ascend_extra: dict[str, Any] | None = None
    """Fields under `ascend.` that only telemetry entries carry (`npu`, `profiling`)."""

    def __init__(self, original: str, fmt: str) -> None:
        self.original = original
        self.format = fmt

    def derive_body_fields(self) -> None:
        """Set every body field that is not set yet: parse the body, or take the defaults."""
        values = self.__dict__
        body = values.pop("body", None)
        if body is not None:
            # `text` stays what it was before the body was split: readers that look for a
            # line's tags (`[Get][Connection]`) must not see a different line after another
            # reader asked for `message`
            continuation = values.get("continuation")
            values["_text"] = body if continuation is None else body + "\n" + continuation
        if body is not None and self.body_parser is not None:
            self.body_parser(self, body)
        for name in _BODY_FIELDS:
            if name not in values:
                values[name] = "" if name == "message" else None
        continuation = values.pop("continuation", None)
        if continuation is not None:
            values["message"] = values["message"] + "\n" + continuation

    @property
    def error_code(self) -> str | None:
        """The primary CANN code: the first one in the record."""
        return self.error_codes[0] if self.error_codes else None

    @property
    def is_error(self) -> bool:
        return self.level in ERROR_LEVELS

    @property
    def text(self) -> str:
        """Everything after the header, with continuation lines: where codes are searched."""
        kept: str | None = self.__dict__.get("_text")
        if kept is not None:
            return kept
        body: str | None = self.__dict__.get("body")
        head = body if body is not None else self.message
        continuation: str | None = self.__dict__.get("continuation")
        if continuation is not None and body is not None:
            return head + "\n" + continuation
        return head

    @property
    def lowered_text(self) -> str:
        """`text` in lower case, kept once computed (case-insensitive rule tests share it)."""
        cached: str | None = self.__dict__.get("_lowered_text")
        if cached is None:
            cached = self.__dict__["_lowered_text"] = self.text.lower()
        return cached

    def to_document(self) -> dict[str, Any]:
        """The nested ECS document for this record; absent values are left out. (Written out
        field by field: shipping builds one per record.)"""
        source = self.source or _NO_SOURCE
        doc: dict[str, Any] = {}
        if self.timestamp_us is not None:
            try:  # noqa: SIM105 - a try is free per document, suppress() is a context manager
                doc["@timestamp"] = format_timestamp(self.timestamp_us)
            except OverflowError:  # beyond the year 9999 (no parser dates one so): no time
                pass
        doc["message"] = self.message
        log: dict[str, Any] = {}
        if self.level is not None:
            log["level"] = self.level
        if self.logger is not None:
            log["logger"] = self.logger
        if self.offset is not None:
            log["offset"] = self.offset
        if source.path is not None:
            log["file"] = {"path": source.path}
        origin: dict[str, Any] = {} if self.function is None else {"function": self.function}
        origin_file, origin_line = self.origin_file, self.origin_line
        if origin_line is not None:
            origin["file"] = (
                {"line": origin_line}
                if origin_file is None
                else {"name": origin_file, "line": origin_line}
            )
        elif origin_file is not None:
            origin["file"] = {"name": origin_file}
        if origin:
            log["origin"] = origin
        doc["log"] = log
        process: dict[str, Any] = {}
        if self.pid is not None:
            process["pid"] = self.pid
        if self.process_name is not None:
            process["name"] = self.process_name
        if self.thread_id is not None:
            process["thread"] = {"id": self.thread_id}
        if process:
            doc["process"] = process
        if self.error_codes:
            doc["error"] = {"code": self.error_codes[0]}
        doc["event"] = {"original": self.original}
        if source.host is not None:
            doc["host"] = {"name": source.host}
        doc["ascend"] = self._ascend_fields(source)
        return doc

    def _ascend_fields(self, source: SourceInfo) -> dict[str, Any]:
        ascend: dict[str, Any] = {"kind": source.kind}
        if source.channel is not None:
            ascend["channel"] = source.channel
        device = self.device if self.device is not None else source.device
        if device is not None:
            ascend["device"] = device
        if self.rank is not None:
            ascend["rank"] = self.rank
        if self.error_codes:
            ascend["error_codes"] = self.error_codes
        if self.runtime_codes:
            ascend["runtime_codes"] = self.runtime_codes
        if self.framework_code is not None:
            ascend["framework_code"] = self.framework_code
        if self.tags:
            ascend["tags"] = self.tags
        if self.submodule is not None:
            ascend["submodule"] = self.submodule
        ascend["format"] = self.format
        if self.flags:
            flags = Flag.names(self.flags)
            if flags:
                ascend["flags"] = flags
        if self.encoding is not None:
            ascend["encoding"] = self.encoding
        ascend["lines"] = self.line_count
        if self.end_offset is not None:
            ascend["end_offset"] = self.end_offset
        if source.pid is not None or source.created_us is not None:
            file: dict[str, Any] = {} if source.pid is None else {"pid": source.pid}
            if source.created_us is not None:
                file["created"] = format_timestamp(source.created_us)
            ascend["file"] = file
        if self.ascend_extra:
            ascend.update(self.ascend_extra)
        return ascend


class BatchIndex(NamedTuple):
    """What a parser learns about a batch of records in passing, so that the rule engine need
    not read every record again: each record's level and module, and where the records with
    flags are."""

    levels: list[str | None]
    flagged: list[int]
    loggers: list[str | None]
    """Each record's module: a rule engine whose rules name modules learns from it, in one
    C-speed test, whether the batch holds any of them (mostly not: those are the debugging
    tools' entries) and can pass over the modules of the records."""


@dataclass(frozen=True)
class SourceInfo:
    """Where records came from: shared by every record of one stream."""

    path: str | None = None
    host: str | None = None
    kind: str = "other"
    channel: str | None = None
    device: int | None = None
    pid: int | None = None
    """The pid in the file name."""
    created_us: int | None = None
    """The creation time in the file name."""


_NO_SOURCE = SourceInfo()
