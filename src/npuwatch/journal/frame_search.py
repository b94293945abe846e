"""Searching a format-3 block frame by frame: only the frames whose trigram filters hold the
literal every match contains are decompressed, and only those whose bytes then hold it are
decoded (text_frames.py has the layout, block_search.py the search itself).

The work is cut in two for block_scan.py's thread: `open_frames` (the filters, zstd, the
literal's bytes: C work that mostly frees the interpreter) runs ahead in the unpacking thread;
`frames_matching` (UTF-8 decoding, the search, the records) runs in the caller's.

A frame that does not decompress (damage on disk: zstd's checksum fails) costs its own records
and is told in `OpenedFrames.damage`; the block's other frames are read as usual. A damaged
head, dictionary or frame table costs the block, as damage anywhere did in format 2.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from npuwatch.journal.block import BlockFormatError, head_columns, unpack
from npuwatch.journal.block_search import BlockSearch, TextSpan, matching_in_span
from npuwatch.journal.rows import StoredRecord
from npuwatch.journal.text_frames import MARKER, FramedBlock, FrameError
from npuwatch.journal.trigram_filter import probes_of


@dataclass
class OpenedFrames:
    """The frames of one format-3 block that may hold a match, decompressed."""

    bounds: array[int]
    """The first record of each frame, and the block's record count at the end."""
    head: bytes | None = None
    """The block's columns, uncompressed; None when no frame may hold a match."""
    frames: list[tuple[int, bytes]] = field(default_factory=list)
    """(frame index, UTF-8 text) of each frame to search, in order."""
    damage: list[str] = field(default_factory=list)
    """What could not be read: one line a damaged frame."""


def unpack_for(payload: bytes, search: BlockSearch | None) -> bytes | OpenedFrames:
    """What the unpacking thread prepares of a block for `search`: a format-2 block whole
    (block.unpack), a format-3 block's frames that may hold a match. BlockFormatError when
    the block cannot be read at all."""
    if payload[:1] != MARKER:
        return unpack(payload)
    try:
        return open_frames(FramedBlock.read(payload), search)
    except FrameError as error:
        raise BlockFormatError(f"unreadable block: {error}") from error


def open_frames(framed: FramedBlock, search: BlockSearch | None) -> OpenedFrames:
    """The frames of `framed` whose filters and bytes may hold the search's literal (every
    frame when it has none), with the block's head when there is one at least."""
    needle = None if search is None or search.literal is None else search.literal.encode("utf-8")
    probes = None if needle is None else probes_of(needle, framed.log2_bits)
    opened = OpenedFrames(framed.bounds)
    candidates = framed.passing(probes)
    if not candidates:
        return opened
    decompressor = framed.decompressor()
    for index in candidates:
        try:
            text = framed.frame(index, decompressor)
        except FrameError as error:
            opened.damage.append(
                f"frame {index} (records {_records(framed.bounds, index)}): {error}"
            )
            continue
        if needle is None or needle in text:
            opened.frames.append((index, text))
    if opened.frames:
        opened.head = framed.head()
    return opened


def frames_matching(
    opened: OpenedFrames, search: BlockSearch | None
) -> list[tuple[int, StoredRecord]]:
    """The records of the opened frames that the search may match, with their positions in
    the block. A frame whose text does not fit its records is told in `opened.damage`."""
    if opened.head is None:
        return []
    columns = head_columns(opened.head)
    bounds = opened.bounds
    if columns.count != bounds[-1]:
        raise BlockFormatError("unreadable block: its frames and its columns disagree")
    starts = columns.starts
    found: list[tuple[int, StoredRecord]] = []
    for index, raw in opened.frames:
        first, last = bounds[index], bounds[index + 1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            opened.damage.append(f"frame {index} (records {_records(bounds, index)}): {error}")
            continue
        if len(text) != starts[last] - 1 - starts[first]:
            problem = "its text does not match its records' lengths"
            opened.damage.append(f"frame {index} (records {_records(bounds, index)}): {problem}")
            continue
        found.extend(matching_in_span(columns, TextSpan(text, starts[first], first, last), search))
    return found


def _records(bounds: array[int], index: int) -> str:
    return f"{bounds[index]}–{bounds[index + 1] - 1}"
