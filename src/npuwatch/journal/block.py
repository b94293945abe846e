"""A block: the records of one file from one commit, stored as columns in one compressed blob.

The journal stores blocks, not rows (see docs/adr/0001-journal-storage.md): a row per record costs
more to write than parsing the line did, while a block costs a few C-speed passes over the batch.
Next to the blob, a block row carries a summary (time range, levels, modules, codes, pids) that
lets a query skip every block that cannot hold a match without opening it.

The blob holds, for n records: times, offsets, end offsets, flags and text lengths as arrays of
fixed-size integers; levels and modules as one byte per record pointing into a small dictionary;
pids and codes as JSON; and the original texts joined by newlines. Decoding gives `StoredRecord`s.
"""

from __future__ import annotations

import json
import struct
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress
from operator import attrgetter, or_
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the query side (`grep`) never loads the record schema
    from npuwatch.records import Record

_TIMESTAMP = attrgetter("timestamp_us")
_LEVEL = attrgetter("level")
_LOGGER = attrgetter("logger")
_PID = attrgetter("pid")
_CODES = attrgetter("error_codes")
_FLAGS = attrgetter("flags")
_OFFSET = attrgetter("offset")
_END = attrgetter("end_offset")
_ORIGINAL = attrgetter("original")

NOTABLE_LEVELS = frozenset({"WARNING", "WARN", "ERROR", "EXCEPTION", "CRITICAL", "FATAL", "EVENT"})
"""Records at these levels, and records carrying error codes, are also indexed one row each."""

_NO_TIME = -(2**63)
"""Stands for a record without a time in the time array (no record is dated 292,277 BC)."""
_EXPORTED_FLAGS = 0xFFFF
"""Internal flag bits (above 16) are hints for the rule engine, not facts worth keeping."""
_HEADER = struct.Struct("<BIII")
"""Format version, record count, length of the dictionary JSON, length of the columns JSON."""
_VERSION = 1


@dataclass(frozen=True)
class BlockSummary:
    """What a query can know about a block without opening it."""

    count: int
    first_us: int | None
    last_us: int | None
    levels: str
    """Space-delimited, with a space at each end, so that `LIKE '% ERROR %'` tests membership."""
    modules: str
    codes: str
    pids: str


@dataclass(frozen=True)
class NotableRecord:
    """A record worth a row of its own in the journal's index (see NOTABLE_LEVELS): what the
    structured questions of `grep` (level, code, device, time) are answered from."""

    position: int
    timestamp_us: int | None
    level: str | None
    logger: str | None
    pid: int | None
    code: str | None
    codes: str
    """Every code, space-delimited with a space at each end."""
    device: int | None
    offset: int | None
    original: str


@dataclass(frozen=True)
class EncodedBlock:
    summary: BlockSummary
    payload: bytes
    raw_bytes: int
    """Bytes of original text in the block (before compression)."""
    notable: list[NotableRecord]


@dataclass
class StoredRecord:
    """A record read back from the journal: the fields kept per record, and its text."""

    timestamp_us: int | None
    level: str | None
    logger: str | None
    pid: int | None
    error_codes: list[str]
    flags: int
    offset: int | None
    end_offset: int | None
    original: str


def _members(values: Sequence[object]) -> str:
    present = sorted({str(value) for value in values if value is not None})
    return f" {' '.join(present)} " if present else " "


def encode_block(records: Sequence[Record], compress: bool = True) -> EncodedBlock:
    """Columns and text of a batch of records of one file, in their order."""
    count = len(records)
    times = list(map(_TIMESTAMP, records))
    try:
        time_array = array("q", times)
        present_times = times
    except TypeError:  # a record before the stream's first time
        time_array = array("q", [_NO_TIME if t is None else t for t in times])
        present_times = [t for t in times if t is not None]
    levels = list(map(_LEVEL, records))
    loggers = list(map(_LOGGER, records))
    names = list(dict.fromkeys(levels + loggers))
    position = {name: index for index, name in enumerate(names)}
    kind = "B" if len(names) <= 256 else "H"
    level_index = array(kind, map(position.__getitem__, levels))
    logger_index = array(kind, map(position.__getitem__, loggers))
    pids = list(map(_PID, records))
    codes = list(map(_CODES, records))
    originals = list(map(_ORIGINAL, records))
    offsets = [-1 if value is None else value for value in map(_OFFSET, records)]
    ends = [-1 if value is None else value for value in map(_END, records)]
    flags = [value & _EXPORTED_FLAGS for value in map(_FLAGS, records)]
    dictionary = json.dumps(names).encode()
    columns = json.dumps([pids, codes if any(codes) else None]).encode()
    text = "\n".join(originals).encode("utf-8")
    parts = [
        _HEADER.pack(_VERSION, count, len(dictionary), len(columns)),
        time_array.tobytes(),
        array("q", offsets).tobytes(),
        array("q", ends).tobytes(),
        array("I", flags).tobytes(),
        array("I", map(len, originals)).tobytes(),
        kind.encode(),
        level_index.tobytes(),
        logger_index.tobytes(),
        dictionary,
        columns,
        text,
    ]
    payload = b"".join(parts)
    if compress:
        payload = b"z" + zlib.compress(payload, 1)
    else:
        payload = b"-" + payload
    all_codes = sorted(set().union(*codes)) if any(codes) else []
    summary = BlockSummary(
        count=count,
        first_us=min(present_times, default=None),
        last_us=max(present_times, default=None),
        levels=_members(levels),
        modules=_members(loggers),
        codes=f" {' '.join(all_codes)} " if all_codes else " ",
        pids=_members(pids),
    )
    return EncodedBlock(summary, payload, len(text), _notable(records, levels, codes))


def _notable(
    records: Sequence[Record], levels: list[str | None], codes: list[list[str]]
) -> list[NotableRecord]:
    positions = compress(
        range(len(records)), map(or_, map(NOTABLE_LEVELS.__contains__, levels), map(bool, codes))
    )
    notable = []
    for position in positions:
        record = records[position]
        source = record.source
        device = record.device  # derived from the body: paid for the few notable records only
        if device is None and source is not None:
            device = source.device
        record_codes = record.error_codes
        notable.append(
            NotableRecord(
                position=position,
                timestamp_us=record.timestamp_us,
                level=record.level,
                logger=record.logger,
                pid=record.pid,
                code=record_codes[0] if record_codes else None,
                codes=f" {' '.join(record_codes)} " if record_codes else " ",
                device=device,
                offset=record.offset,
                original=record.original,
            )
        )
    return notable


class BlockFormatError(ValueError):
    """The blob is not a block this version can read (corruption, or a newer format)."""


def decode_block(payload: bytes) -> list[StoredRecord]:
    """The records of a block, in their order."""
    try:
        return list(_decode(payload))
    except (zlib.error, struct.error, ValueError, IndexError, KeyError, TypeError) as error:
        raise BlockFormatError(f"unreadable block: {error}") from error


def _decode(payload: bytes) -> Iterator[StoredRecord]:
    marker, body = payload[:1], payload[1:]
    if marker == b"z":
        body = zlib.decompress(body)
    elif marker != b"-":
        raise ValueError(f"unknown block encoding {marker!r}")
    version, count, dictionary_length, columns_length = _HEADER.unpack_from(body)
    if version != _VERSION:
        raise ValueError(f"block format {version} (this npuwatch reads {_VERSION})")
    view = memoryview(body)[_HEADER.size :]

    def take(typecode: str, items: int) -> array[int]:
        nonlocal view
        values = array(typecode)
        size = values.itemsize * items
        if len(view) < size:  # a cut payload would otherwise give fewer values, silently
            raise ValueError("block is shorter than its header says")
        values.frombytes(view[:size])
        view = view[size:]
        return values

    times = take("q", count)
    offsets = take("q", count)
    ends = take("q", count)
    flags = take("I", count)
    lengths = take("I", count)
    kind = bytes(view[:1]).decode()
    if kind not in ("B", "H"):
        raise ValueError(f"unknown index width {kind!r}")
    view = view[1:]
    level_index = take(kind, count)
    logger_index = take(kind, count)
    names = json.loads(bytes(view[:dictionary_length]))
    view = view[dictionary_length:]
    pids, codes = json.loads(bytes(view[:columns_length]))
    text = bytes(view[columns_length:]).decode("utf-8")
    starts = [0, *accumulate(length + 1 for length in lengths)]
    if len(text) != max(starts[-1] - 1, 0):  # the texts are the rest of the blob, exactly
        raise ValueError("block text does not match its lengths")
    for index in range(count):
        time = times[index]
        offset = offsets[index]
        end = ends[index]
        yield StoredRecord(
            timestamp_us=None if time == _NO_TIME else time,
            level=names[level_index[index]],
            logger=names[logger_index[index]],
            pid=pids[index],
            error_codes=codes[index] if codes is not None else [],
            flags=flags[index],
            offset=None if offset < 0 else offset,
            end_offset=None if end < 0 else end,
            original=text[starts[index] : starts[index] + lengths[index]],
        )
