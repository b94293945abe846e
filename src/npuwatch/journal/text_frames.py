"""Block format 3: a block's text in frames of about 16 KiB, each compressed on its own and
filtered by its trigrams, so that `grep` decompresses only the frames that may hold a match.

Format 2 compressed a block (columns and text, a few MiB) as one zstd frame: every question
about the text paid for decompressing and decoding all of it. Here the columns stay one frame
(the head), and the text is cut at record boundaries into frames, each with a trigram filter
(trigram_filter.py) stored uncompressed beside the others. A damaged frame costs its own
records, not the block's.

Independent 16 KiB frames compress 3× worse than the whole text. Each frame is compressed
with a dictionary instead: the first 128 KiB of the block's own text, as raw content, stored
once (compressed) per block. On bench/anchors.py's real-format tree the text then takes 1.23×
its format-2 size instead of 3.3× (docs/adr/0005-grep-text-index.md).

The payload, after its marker b"f":
    _LAYOUT: head length, dictionary length, frame count, log2 of a filter's bits, CRC-32 of
             the table and the filters (they are not compressed, so zstd cannot check them)
    head:    zstd frame of the block's header and columns (block.py's layout without the text)
    table:   frame count + 1 uint32 record indexes (frame i holds records table[i] to
             table[i + 1]), then frame count uint32 compressed lengths
    filters: frame count filters of 2**log2 bits each
    dictionary: zstd frame of the raw dictionary's bytes (empty when the text is shorter)
    frames:  each a zstd frame (with checksum) of its records' texts joined by newlines
"""

from __future__ import annotations

import struct
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import zstandard

from npuwatch.journal.trigram_filter import LOG2_BITS, passing_frames, trigram_filter

MARKER = b"f"
_LAYOUT = struct.Struct("<IIIBI")
FRAME_CHARACTERS = 16 * 1024
"""A frame closes at the first record boundary past this many characters of text. Smaller
frames skip more text (16 KiB: 9.5 % of the frames hold the bench's literal, 64 KiB: 33 %)
but cost a filter each."""
DICTIONARY_BYTES = 128 * 1024
"""Measured on the bench's text: 16 KiB frames with the first frame (16 KiB) as dictionary
took 2.3× the whole text's compressed size, with the first 128 KiB 1.23×."""
_SHORTEST_DICTIONARY = 8
"""zstd wants a few bytes of content in a raw dictionary; a shorter text needs none."""
_LARGEST_PART = 1 << 30


class FrameError(ValueError):
    """A frame, or the block's layout of frames, cannot be read."""


def frame_bounds(starts: Sequence[int], count: int) -> list[int]:
    """The first record of each frame, and `count` at the end, for records whose texts start
    at `starts` (count + 1 items, block_columns.text_starts) in the joined text."""
    bounds = [0]
    while bounds[-1] < count:
        first = bounds[-1]
        bounds.append(min(bisect_left(starts, starts[first] + FRAME_CHARACTERS, first + 1), count))
    return bounds


def pack(head: bytes, text: str, starts: Sequence[int], count: int) -> tuple[bytes, int]:
    """The payload of a block whose header and columns are `head` and whose records' texts,
    joined by newlines, are `text` (each record starting at `starts`); and the bytes of that
    text in UTF-8."""
    bounds = frame_bounds(starts, count)
    frames = [text[starts[a] : starts[b] - 1].encode("utf-8") for a, b in pairwise(bounds)]
    raw_dictionary = _leading(frames, DICTIONARY_BYTES)
    plain = zstandard.ZstdCompressor(level=1, write_checksum=True)
    if len(raw_dictionary) >= _SHORTEST_DICTIONARY:
        dictionary = zstandard.ZstdCompressionDict(
            raw_dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT
        )
        framer = zstandard.ZstdCompressor(level=1, dict_data=dictionary, write_checksum=True)
        stored_dictionary = plain.compress(raw_dictionary)
    else:
        framer, stored_dictionary = plain, b""
    compressed = [framer.compress(frame) for frame in frames]
    table = array("I", bounds).tobytes() + array("I", map(len, compressed)).tobytes()
    filters = b"".join(trigram_filter(frame, LOG2_BITS) for frame in frames)
    stored_head = plain.compress(head)
    layout = _LAYOUT.pack(
        len(stored_head),
        len(stored_dictionary),
        len(frames),
        LOG2_BITS,
        zlib.crc32(filters, zlib.crc32(table)),
    )
    payload = b"".join(
        [MARKER, layout, stored_head, table, filters, stored_dictionary, *compressed]
    )
    return payload, sum(map(len, frames)) + max(len(frames) - 1, 0)


def _leading(frames: list[bytes], size: int) -> bytes:
    """The first `size` bytes of the frames joined by newlines (without joining them all)."""
    taken, total = [], 0
    for frame in frames:
        taken.append(frame)
        total += len(frame) + 1
        if total >= size:
            break
    return b"\n".join(taken)[:size]


@dataclass(frozen=True)
class FramedBlock:
    """A format-3 payload, read as far as its frames (nothing is decompressed yet)."""

    payload: bytes
    head_at: int
    head_length: int
    bounds: array[int]
    """The first record of each frame, and the record count at the end."""
    frame_at: array[int]
    """Where each frame starts in the payload, and where the last one ends."""
    filters: bytes
    log2_bits: int
    dictionary_at: int
    dictionary_length: int

    @classmethod
    def read(cls, payload: bytes) -> FramedBlock:
        """The layout of `payload`; FrameError when it does not hold together."""
        try:
            head_length, dictionary_length, count, log2_bits, checksum = _LAYOUT.unpack_from(
                payload, len(MARKER)
            )
        except struct.error as error:
            raise FrameError(f"block layout: {error}") from error
        head_at = len(MARKER) + _LAYOUT.size
        table_at = head_at + head_length
        filters_at = table_at + 4 * (2 * count + 1)
        filter_bytes = (1 << (log2_bits - 3)) if 3 <= log2_bits <= 24 else -1
        dictionary_at = filters_at + count * filter_bytes
        if filter_bytes < 0 or dictionary_at + dictionary_length > len(payload):
            raise FrameError("block layout: shorter than its header says")
        table = memoryview(payload)[table_at:filters_at]
        filters = payload[filters_at:dictionary_at]
        if zlib.crc32(filters, zlib.crc32(table)) != checksum:
            raise FrameError("block layout: the frame table or filters are damaged")
        bounds, lengths = array("I"), array("I")
        bounds.frombytes(table[: 4 * (count + 1)])
        lengths.frombytes(table[4 * (count + 1) :])
        frame_at = array("q", [dictionary_at + dictionary_length])
        for length in lengths:
            frame_at.append(frame_at[-1] + length)
        if frame_at[-1] != len(payload):
            raise FrameError("block layout: the frames do not end where the block does")
        if any(a > b for a, b in pairwise(bounds)) or bounds[0] != 0:
            raise FrameError("block layout: the frames' records are out of order")
        return cls(
            payload,
            head_at,
            head_length,
            bounds,
            frame_at,
            filters,
            log2_bits,
            dictionary_at,
            dictionary_length,
        )

    @property
    def frame_count(self) -> int:
        return len(self.bounds) - 1

    def passing(self, probes: bytes | None) -> list[int]:
        """The frames whose filters hold every bit of `probes` (every frame for None)."""
        if probes is None:
            return list(range(self.frame_count))
        return list(passing_frames(self.filters, self.log2_bits, probes))

    def head(self) -> bytes:
        """The block's header and columns, uncompressed (block.py reads them)."""
        return _decompress(self.payload[self.head_at : self.head_at + self.head_length])

    def decompressor(self) -> zstandard.ZstdDecompressor:
        """What decompresses this block's frames (with its dictionary, when it has one)."""
        if not self.dictionary_length:
            return zstandard.ZstdDecompressor()
        at = self.dictionary_at
        raw = _decompress(self.payload[at : at + self.dictionary_length])
        dictionary = zstandard.ZstdCompressionDict(raw, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdDecompressor(dict_data=dictionary)

    def frame(self, index: int, decompressor: zstandard.ZstdDecompressor) -> bytes:
        """The UTF-8 text of frame `index`; FrameError when it is damaged."""
        return _decompress(
            self.payload[self.frame_at[index] : self.frame_at[index + 1]], decompressor
        )

    def body(self) -> bytes:
        """The head, then every frame's text joined by newlines: what a format-2 block's one
        zstd frame held. Each frame is written once into the result (joining the frames and
        then adding the head copied the block's text twice, a third of a whole block's read)."""
        decompressor = self.decompressor()
        body = bytearray(self.head())
        for index in range(self.frame_count):
            if index:
                body += b"\n"
            body += self.frame(index, decompressor)
        return bytes(body)


def _decompress(frame: bytes, decompressor: zstandard.ZstdDecompressor | None = None) -> bytes:
    """One zstd frame, checked; a damaged header cannot make it claim gigabytes."""
    try:
        claimed = zstandard.frame_content_size(frame)
        if claimed > _LARGEST_PART or claimed < 0:
            raise FrameError(f"a frame claims {claimed} bytes uncompressed")
        return (decompressor or zstandard.ZstdDecompressor()).decompress(frame)
    except zstandard.ZstdError as error:
        raise FrameError(f"damaged frame: {error}") from error
