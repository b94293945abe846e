"""The trigram filter of a text frame: which frames of a block may hold a literal.

A filter is a bitset in which each byte trigram of the frame's UTF-8 text sets one bit (its
24-bit value hashed multiplicatively to LOG2_BITS bits). A frame holding a literal holds each
of the literal's trigrams, so every bit the literal's trigrams hash to is set in its filter: a
frame whose filter lacks one of them cannot hold the literal, and is never decompressed. A set
bit proves nothing (another trigram may have set it): a passing frame is searched as before.

Size, measured on bench/anchors.py's 1M-line real-format tree (docs/adr/0005-grep-text-index.md):
a 16 KiB frame holds about 3,900 distinct trigrams; at 8,192 bits (1 KiB a frame) and one hash,
17 % of the frames pass for `Aicore kernel execute failed` (8.5 % hold it), against 15 % at
twice the bits: the smaller filter keeps the journal within its size budget.

The C extension (`_trigrams.c`) builds and tests the filters; the functions below are its
contract. Where it was not built, blocks are written with filters of every bit set
(`filter_passing_everything`): building them in Python took 0.54 s of CPU a MiB of text against
2.2 ms in C, more than parsing the lines, so such a host's journal is as searchable as ever but
its frames are never skipped.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

LOG2_BITS = 13
"""Bits of a filter as a power of two (8,192 bits, 1 KiB); a block states its own."""
_GOLDEN = 2654435761
"""Knuth's multiplicative hash: the top bits of trigram * _GOLDEN mod 2**32."""
_SHORTEST_FILTERED = 3
"""A literal shorter than a trigram sets no bit: every frame may hold it."""


def _bit(trigram: int, log2_bits: int) -> int:
    return ((trigram * _GOLDEN) & 0xFFFFFFFF) >> (32 - log2_bits)


def filter_python(frame: bytes, log2_bits: int) -> bytes:
    """The filter of `frame`: one bit set for each of its byte trigrams."""
    bits = bytearray(1 << (log2_bits - 3))
    for at in range(len(frame) - 2):
        bit = _bit(frame[at] << 16 | frame[at + 1] << 8 | frame[at + 2], log2_bits)
        bits[bit >> 3] |= 1 << (bit & 7)
    return bytes(bits)


def filter_passing_everything(frame: bytes, log2_bits: int) -> bytes:
    """A filter that holds every trigram: no literal rules its frame out."""
    return b"\xff" * (1 << (log2_bits - 3))


def passing_python(filters: bytes, log2_bits: int, probes: bytes) -> list[int]:
    """The indexes of the filters (end to end in `filters`) with every bit of `probes` set."""
    size = 1 << (log2_bits - 3)
    positions = array("I")
    positions.frombytes(probes)
    return [
        index
        for index in range(len(filters) // size)
        if all(filters[index * size + (p >> 3)] >> (p & 7) & 1 for p in positions)
    ]


def probes_of(literal: bytes, log2_bits: int) -> bytes | None:
    """The bits a frame's filter must have set to hold `literal` (32-bit positions, each once),
    or None when the literal is too short to rule out any frame."""
    if len(literal) < _SHORTEST_FILTERED:
        return None
    bits = {
        _bit(literal[at] << 16 | literal[at + 1] << 8 | literal[at + 2], log2_bits)
        for at in range(len(literal) - 2)
    }
    return array("I", sorted(bits)).tobytes()


def _choose() -> tuple[Callable[[bytes, int], bytes], Callable[[bytes, int, bytes], list[int]]]:
    try:
        from npuwatch.journal import _trigrams  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:
        return filter_passing_everything, passing_python
    return _trigrams.trigram_filter, _trigrams.passing_frames


trigram_filter, passing_frames = _choose()
"""The C functions when they were built, else a filter passing everything and the Python test."""
NATIVE = trigram_filter is not filter_passing_everything
