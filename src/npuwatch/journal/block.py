"""A block: the records of one file from one commit, stored as columns in one compressed blob.

The journal stores blocks, not rows (see docs/adr/0001-journal-storage.md): a row per record costs
more to write than parsing the line did, while a block costs a few C-speed passes over the batch.
Next to the blob, a block row carries a summary (time range, levels, modules, codes, pids) that
lets a query skip every block that cannot hold a match without opening it.

The blob holds, for n records: times, offsets, end offsets, flags and text lengths as arrays of
fixed-size integers; levels and modules as one byte per record pointing into a small dictionary;
pids and codes as JSON; and the original texts joined by newlines. Decoding gives
`rows.StoredRecord`s.

Format 3 (written since 0.2.0) keeps these columns and this text, but compresses the text in
frames of about 16 KiB with a trigram filter each (text_frames.py), so that `grep` decompresses
only the frames that may hold its literal. Format 2 blocks (one zstd frame) are still read.
"""

from __future__ import annotations

import json
import struct
import zlib
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import lt
from typing import TYPE_CHECKING, NamedTuple

import zstandard

from npuwatch.bounded_numbers import fits
from npuwatch.journal.block_columns import NONE as _NONE
from npuwatch.journal.block_columns import Columns, block_columns, text_starts
from npuwatch.journal.block_sparse import decode_sparse, encode_sparse
from npuwatch.journal.rows import StoredRecord
from npuwatch.journal.text_frames import MARKER as _FRAMED
from npuwatch.journal.text_frames import FramedBlock
from npuwatch.journal.text_frames import pack as pack_frames
from npuwatch.vocabulary import NOTABLE_LEVELS

if TYPE_CHECKING:  # the query side (`grep`) never loads the record schema
    from npuwatch.records import Record

_EXPORTED_FLAGS = 0xFFFF
"""Internal flag bits (above 16) are hints for the rule engine, not facts worth keeping."""
_HEADER = struct.Struct("<BIII")
"""Format version, record count, length of the dictionary JSON, length of the sparse columns."""
_VERSION = 3
"""The version a compressed block is written with: its text framed (text_frames.py), its sparse
columns binary (block_sparse.py). An uncompressed block (tests, `compress = false`) has no frames
to filter and is written in format 2."""
_PLAIN_VERSION = 2
_READABLE = (2, 3)
_FIXED_BYTES_PER_RECORD = 4 * 8 + 4
"""Times, offsets, end offsets and pids (8 bytes each), the text length (4)."""
_LARGEST_BLOCK_BYTES = 1 << 30
"""Far above any block a commit writes (a few MiB); a size beyond it is damage."""


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
    tally: BlockTally


class BlockTally(NamedTuple):
    """What a block's records count for the agent's metrics, taken while it is encoded (a
    second pass over every record for them was a tenth of the agent's CPU on a flood)."""

    records: dict[tuple[str | None, str | None], int]
    """Records by (level, module)."""
    codes: dict[tuple[str, str | None], int]
    """Error codes by (code, module of the record that carries it)."""
    newest_us: int | None
    """The latest time of a record after 1970, or None."""


def tally_of(records: Sequence[Record]) -> BlockTally:
    """The tally of records that are not encoded (a test, a batch counted on its own)."""
    return _tally(records, block_columns(records, NOTABLE_LEVELS, _EXPORTED_FLAGS))


def _tally(records: Sequence[Record], columns: Columns) -> BlockTally:
    codes: Counter[tuple[str, str | None]] = Counter()
    for position, record_codes in columns.codes:  # the few records that carry codes
        module = records[position].logger
        for code in record_codes:
            codes[code, module] += 1
    newest = columns.last_us if columns.last_us else None  # a time of 0 is no time
    return BlockTally(columns.pairs, dict(codes), newest)


def _members(values: Iterable[object]) -> str:
    present = sorted(str(value) for value in set(values) if value is not None)
    return f" {' '.join(present)} " if present else " "


def encode_block(records: Sequence[Record], compress: bool = True) -> EncodedBlock:
    """Columns and text of a batch of consecutive records of one file, in their order."""
    count = len(records)
    columns = block_columns(records, NOTABLE_LEVELS, _EXPORTED_FLAGS)
    # Flags and codes are rare: kept as (position, value) pairs, not a column each.
    version = _VERSION if compress else _PLAIN_VERSION
    dictionary = json.dumps(columns.names).encode()
    sparse = encode_sparse(version, columns.flags, columns.codes)
    joined = "\n".join(columns.originals)
    head = [
        _HEADER.pack(version, count, len(dictionary), len(sparse)),
        columns.times,
        columns.offsets,
        columns.ends,
        columns.pids,
        columns.lengths,
        columns.kind.encode(),
        columns.level_index,
        columns.logger_index,
        dictionary,
        sparse,
    ]
    if compress:
        # zstd at level 1: 3 times the speed of zlib's fastest level, and smaller output
        # (459 against 135 MB/s, 7.8 against 5.5 times, on the benchmark's DEBUG plog).
        # With its checksums, a block damaged on disk fails to decode instead of decoding wrong.
        starts = text_starts(array("I", columns.lengths))
        payload, raw_bytes = pack_frames(b"".join(head), joined, starts, count)
    else:
        text = joined.encode("utf-8")
        payload, raw_bytes = b"-" + b"".join([*head, text]), len(text)
    all_codes = sorted(set().union(*(codes for _, codes in columns.codes)))
    summary = BlockSummary(
        count=count,
        first_us=columns.first_us,
        last_us=columns.last_us,
        levels=_members(columns.distinct_levels),
        modules=_members(columns.distinct_loggers),
        codes=f" {' '.join(all_codes)} " if all_codes else " ",
        pids=_members(columns.distinct_pids),
    )
    tally = _tally(records, columns)
    return EncodedBlock(summary, payload, raw_bytes, _notable(records, columns.notable), tally)


def _notable(records: Sequence[Record], positions: list[int]) -> list[NotableRecord]:
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
                # As in the block's columns, a value beyond 64 bits is kept as None.
                timestamp_us=_kept(record.timestamp_us),
                level=record.level,
                logger=record.logger,
                pid=_kept(record.pid),
                code=record_codes[0] if record_codes else None,
                codes=f" {' '.join(record_codes)} " if record_codes else " ",
                device=_kept(device),
                offset=_kept(record.offset),
                original=record.original,
            )
        )
    return notable


def _kept(value: int | None) -> int | None:
    """`value` when an index row (a signed 64-bit SQLite column) can hold it, else None."""
    return value if value is None or fits(value) else None


class BlockFormatError(ValueError):
    """The blob is not a block this version can read (corruption, or a newer format)."""


def decode_block(payload: bytes) -> list[StoredRecord]:
    """The records of a block, in their order."""
    columns = read_columns(payload)
    return [columns.record(index) for index in range(columns.count)]


@dataclass
class BlockColumns:
    """A block's columns, decoded; records are built from them one at a time."""

    count: int
    times: array[int]
    offsets: array[int]
    ends: array[int]
    pids: array[int]
    lengths: array[int]
    level_index: array[int]
    logger_index: array[int]
    names: list[str | None]
    flags: dict[int, int]
    codes: dict[int, list[str]]
    text: str

    @cached_property
    def starts(self) -> array[int]:
        """Where each record's text starts in `text`, and one past the end (count + 1 items);
        made only for a block whose records are built (most blocks a pattern passes over)."""
        return text_starts(self.lengths)

    def original(self, index: int) -> str:
        start = self.starts[index]
        return self.text[start : start + self.lengths[index]]

    def originals(self, start: int, stop: int) -> list[str]:
        """The texts of records `start` to `stop` (not included), without building records."""
        text, starts, lengths = self.text, self.starts, self.lengths
        return [text[starts[i] : starts[i] + lengths[i]] for i in range(start, stop)]

    def positions_of(self, offset: int) -> list[int]:
        """The records that start at `offset` in their file, the last first (a file truncated
        and written again repeats offsets; the later record is the newer one)."""
        offsets = self.offsets
        if self.ascending:
            index = bisect_right(offsets, offset) - 1
            return [index] if index >= 0 and offsets[index] == offset else []
        return [i for i in range(self.count - 1, -1, -1) if offsets[i] == offset]

    @cached_property
    def ascending(self) -> bool:
        """Whether the offsets only grow (not so in a block where the file was truncated)."""
        offsets = self.offsets
        return all(map(lt, offsets, offsets[1:]))

    def record(self, index: int) -> StoredRecord:
        start = self.starts[index]
        return self.record_with(index, self.text[start : start + self.lengths[index]])

    def record_with(self, index: int, original: str) -> StoredRecord:
        """Record `index` with its text taken elsewhere (a frame of a format-3 block)."""
        time = self.times[index]
        offset = self.offsets[index]
        end = self.ends[index]
        pid = self.pids[index]
        return StoredRecord(  # positional: keywords make a NamedTuple slower to build
            None if time == _NONE else time,
            self.names[self.level_index[index]],
            self.names[self.logger_index[index]],
            None if pid == _NONE else pid,
            self.codes.get(index, []),
            self.flags.get(index, 0),
            None if offset == _NONE else offset,
            None if end == _NONE else end,
            original,
        )


_READ_ERRORS = (
    zstandard.ZstdError,
    zlib.error,
    struct.error,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
)


def _all_below(indexes: array[int], limit: int) -> bool:
    if indexes.typecode == "B":  # deleting the valid bytes is a C pass; max() is a Python one
        return not indexes.tobytes().translate(None, bytes(range(min(limit, 256))))
    return max(indexes, default=0) < limit


def read_columns(payload: bytes) -> BlockColumns:
    return columns_of(unpack(payload))


def unpack(payload: bytes) -> bytes:
    """The block's columns and text, uncompressed (what columns_of reads). zstd frees the
    interpreter while it decompresses: a reader can unpack the next block in a thread."""
    try:
        return _unpack(payload)
    except _READ_ERRORS as error:
        raise BlockFormatError(f"unreadable block: {error}") from error


def _unpack(payload: bytes) -> bytes:
    marker, body = payload[:1], payload[1:]
    if marker == b"s":
        # A damaged frame header can claim any size; decompress would try to allocate it.
        claimed = zstandard.frame_content_size(body)
        if claimed > _LARGEST_BLOCK_BYTES:
            raise ValueError(f"the block claims {claimed} bytes uncompressed")
        return zstandard.ZstdDecompressor().decompress(body, max_output_size=_LARGEST_BLOCK_BYTES)
    if marker == _FRAMED:
        framed = FramedBlock.read(payload)
        return framed.body()
    if marker == b"z":  # zlib, which the first journals of this format used
        return zlib.decompress(body)
    if marker != b"-":
        raise ValueError(f"unknown block encoding {marker!r}")
    return body


def text_start(body: bytes) -> int:
    """Where the records' joined text starts in an unpacked block: a search of the bytes from
    there finds what the text holds without decoding anything."""
    try:
        version, count, dictionary_length, columns_length = _HEADER.unpack_from(body)
    except struct.error as error:
        raise BlockFormatError(f"unreadable block: {error}") from error
    if version not in _READABLE:
        raise BlockFormatError(
            f"unreadable block: block format {version} (this npuwatch reads {_READABLE})"
        )
    index_start = _HEADER.size + count * _FIXED_BYTES_PER_RECORD
    kind = body[index_start : index_start + 1]
    if kind not in (b"B", b"H"):
        raise BlockFormatError(f"unreadable block: unknown index width {kind!r}")
    width = 2 if kind == b"H" else 1
    start = int(index_start + 1 + 2 * width * count + dictionary_length + columns_length)
    if start > len(body):  # what the header says is not there: damage, not a block without text
        raise BlockFormatError("unreadable block: block is shorter than its header says")
    return start


def columns_of(body: bytes) -> BlockColumns:
    """The columns of an unpacked block, checked (a damaged block raises BlockFormatError)."""
    try:
        return _columns(body)
    except _READ_ERRORS as error:
        raise BlockFormatError(f"unreadable block: {error}") from error


def head_columns(head: bytes) -> BlockColumns:
    """The columns of a format-3 block's head (text_frames.FramedBlock.head), without the text:
    records are built with `record_with` from the frames' texts."""
    try:
        return _columns(head, with_text=False)
    except _READ_ERRORS as error:
        raise BlockFormatError(f"unreadable block: {error}") from error


def _columns(body: bytes, with_text: bool = True) -> BlockColumns:
    version, count, dictionary_length, columns_length = _HEADER.unpack_from(body)
    if version not in _READABLE:
        raise ValueError(f"block format {version} (this npuwatch reads {_READABLE})")
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
    pids = take("q", count)
    lengths = take("I", count)
    kind = bytes(view[:1]).decode()
    if kind not in ("B", "H"):
        raise ValueError(f"unknown index width {kind!r}")
    view = view[1:]
    level_index = take(kind, count)
    logger_index = take(kind, count)
    names = json.loads(bytes(view[:dictionary_length]))
    view = view[dictionary_length:]
    flags, codes = decode_sparse(version, bytes(view[:columns_length]))
    text = str(view[columns_length:], "utf-8")
    if with_text and len(text) != max(sum(lengths) + count - 1, 0):  # the rest of the blob
        raise ValueError("block text does not match its lengths")
    if not with_text and text:
        raise ValueError("a block's head holds more than its columns")
    # Checked here, so that building a record later cannot fail on a damaged block.
    if not isinstance(names, list):
        raise TypeError("the block's dictionary is not a list")
    if not (_all_below(level_index, len(names)) and _all_below(logger_index, len(names))):
        raise IndexError("a level or module outside the block's dictionary")
    return BlockColumns(
        count,
        times,
        offsets,
        ends,
        pids,
        lengths,
        level_index,
        logger_index,
        names,
        flags,
        codes,
        text,
    )
