"""Block format 3: the text in frames with trigram filters. Written and read back exactly; format
2 still read; a frame the filters pass over never holds a match; a damaged frame costs its own
records only; the frame-by-frame search finds what the whole-block search finds."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.journal import text_frames
from npuwatch.journal.block import (
    BlockFormatError,
    columns_of,
    decode_block,
    encode_block,
    read_columns,
    text_start,
    unpack,
)
from npuwatch.journal.block_search import BlockSearch, decode_matching
from npuwatch.journal.frame_search import OpenedFrames, frames_matching, unpack_for
from npuwatch.journal.text_frames import FramedBlock
from npuwatch.journal.trigram_filter import (
    filter_passing_everything,
    filter_python,
    passing_frames,
    passing_python,
    probes_of,
    trigram_filter,
)
from npuwatch.records import Record
from tests.journal.conftest import parse_plog, plog_line, stored
from tests.journal.test_block import MIXED_STREAM

HEADER = "[INFO] GE(1,p):2025-09-14-09:37:31.000.000 [x.cc:1] "
BODIES = ["step finished", "设备内存正常", "link to rank 5 timed out", "ab", "aicore ok", "ω≈ç√"]


@pytest.fixture(autouse=True)
def small_frames(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Frames of about 200 characters: a few dozen records make a block of many frames."""
    monkeypatch.setattr(text_frames, "FRAME_CHARACTERS", 200)
    yield


def many_records(count: int = 300, seed: int = 7) -> list[Record]:
    chooser = random.Random(seed)
    lines = []
    for index in range(count):
        body = " ".join(chooser.choice(BODIES) for _ in range(chooser.randint(1, 6)))
        lines.append(plog_line(index, chooser.choice(["INFO", "ERROR", "DEBUG"]), body=body))
        if chooser.random() < 0.1:
            lines.append(f"    continuation {index} 设备")  # a record of two lines
    return parse_plog("".join(line + "\n" for line in lines))


def format_2_payload(records: list[Record]) -> bytes:
    """The block as npuwatch 0.1 wrote it: format 2, one zstd frame of columns and text."""
    body = encode_block(records, compress=False).payload[1:]  # an uncompressed block is format 2
    assert body[0] == 2
    return b"s" + zstandard.ZstdCompressor(level=1, write_checksum=True).compress(body)


def searched_by_frames(payload: bytes, search: BlockSearch | None) -> list[int]:
    prepared = unpack_for(payload, search)
    assert isinstance(prepared, OpenedFrames)
    assert prepared.damage == []
    return [i for i, _ in frames_matching(prepared, search)]


# --- written and read back --------------------------------------------------------------------


def test_a_block_is_written_in_format_3_with_many_frames_and_read_back_exactly() -> None:
    records = many_records()
    payload = encode_block(records).payload
    framed = FramedBlock.read(payload)
    assert payload[:1] == b"f" and framed.frame_count > 10
    assert decode_block(payload) == [stored(record) for record in records]
    plain = encode_block(records, compress=False).payload  # format 2, uncompressed
    body = unpack(payload)
    assert body[text_start(body) :] == plain[1 + text_start(plain[1:]) :]  # the same text
    assert read_columns(payload) == columns_of(plain[1:])


def test_each_frame_holds_whole_records_in_their_order() -> None:
    records = many_records()
    framed = FramedBlock.read(encode_block(records).payload)
    decompressor = framed.decompressor()
    for index in range(framed.frame_count):
        first, last = framed.bounds[index], framed.bounds[index + 1]
        texts = [record.original for record in records[first:last]]
        assert framed.frame(index, decompressor) == "\n".join(texts).encode()


@pytest.mark.parametrize("count", [0, 1, 2])
def test_a_block_of_few_records_or_none_reads_back(count: int) -> None:
    records = many_records()[:count]
    assert decode_block(encode_block(records).payload) == [stored(r) for r in records]


def test_a_format_2_block_is_still_read_and_searched() -> None:
    records = many_records()
    payload = format_2_payload(records)
    assert decode_block(payload) == [stored(record) for record in records]
    pattern = re.compile("timed out")
    prepared = unpack_for(payload, BlockSearch.of(pattern))
    assert isinstance(prepared, bytes)  # a format-2 block is unpacked whole, as before
    built = decode_matching(prepared, BlockSearch.of(pattern))
    expected = [i for i, record in enumerate(records) if pattern.search(record.original)]
    assert [i for i, _ in built] == expected


def test_the_raw_bytes_counted_are_the_texts_in_utf_8() -> None:
    records = many_records()
    text = "\n".join(record.original for record in records).encode()
    assert encode_block(records).raw_bytes == encode_block(records, compress=False).raw_bytes
    assert encode_block(records).raw_bytes == len(text)


# --- the filters ------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([3, 8, 13]))
def test_the_c_filter_is_the_python_filter(frame: bytes, log2_bits: int) -> None:
    assert trigram_filter(frame, log2_bits) == filter_python(frame, log2_bits)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=12), st.binary(min_size=3, max_size=30))
def test_the_c_test_of_the_filters_is_the_python_one(frames: list[bytes], literal: bytes) -> None:
    filters = b"".join(trigram_filter(frame, 8) for frame in frames)
    probes = probes_of(literal, 8)
    assert probes is not None
    assert passing_frames(filters, 8, probes) == passing_python(filters, 8, probes)


TEXT = st.text(alphabet=st.sampled_from("ab 设çω\t[]()1\U0001f600"), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=30), st.data())
def test_a_frame_the_filters_pass_over_never_holds_the_literal(
    bodies: list[str], data: st.DataObject
) -> None:
    records = parse_plog("".join(f"{HEADER}{body}\n" for body in bodies).encode())
    framed = FramedBlock.read(encode_block(records).payload)
    whole = "\n".join(record.original for record in records)
    # A piece of the text (maybe across records, maybe starting inside a character's bytes
    # is impossible: str slices), or any string at all.
    start = data.draw(st.integers(0, len(whole)))
    piece = whole[start : start + data.draw(st.integers(0, 50))]
    literal = data.draw(st.one_of(st.just(piece), TEXT)).encode()
    probes = probes_of(literal, framed.log2_bits)
    passing = set(framed.passing(probes))
    decompressor = framed.decompressor()
    for index in range(framed.frame_count):
        if literal in framed.frame(index, decompressor):
            assert index in passing


def test_without_the_c_pass_every_frame_passes_and_the_search_finds_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = many_records()
    search = BlockSearch.of(re.compile("timed out"))
    with_filters = searched_by_frames(encode_block(records).payload, search)
    monkeypatch.setattr(text_frames, "trigram_filter", filter_passing_everything)
    framed = encode_block(records).payload
    assert FramedBlock.read(framed).passing(probes_of(b"no such text", 13)) == list(
        range(FramedBlock.read(framed).frame_count)
    )
    assert searched_by_frames(framed, search) == with_filters


# --- the frame search finds what the block search finds ----------------------------------------

PATTERNS = [
    r"timed out",
    r"link to rank \d+ timed out",
    r"设备内存",
    r"设备内存\S+",
    r"^\[ERROR\] GE",
    r"ok$",
    r"a\s*e",  # runs across the newline between records: a match of none of them
    r"d out\n\[",  # a literal across a record boundary: never inside one record
    r"(?<!x)timed out",
    r"(?i)AICORE OK",
    r"continuation \d+ 设备",
    r"ab|ω",
    r"nothing like this",
    r"ab",  # a literal shorter than the useful one: every frame is searched
    r"ω≈ç√",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_frame_search_builds_what_the_whole_block_search_builds(pattern: str) -> None:
    records = many_records()
    compiled = re.compile(pattern)
    search = BlockSearch.of(compiled)
    framed_payload, old_payload = encode_block(records).payload, format_2_payload(records)
    by_frames = searched_by_frames(framed_payload, search)
    whole = [i for i, _ in decode_matching(unpack(old_payload), search)]
    assert by_frames == whole
    by_hand = [i for i, r in enumerate(records) if compiled.search(r.original)]
    prepared = unpack_for(framed_payload, search)
    assert isinstance(prepared, OpenedFrames)
    built = dict(frames_matching(prepared, search))
    assert [i for i in sorted(built) if compiled.search(built[i].original)] == by_hand
    assert all(built[i] == stored(records[i]) for i in built)


def test_without_a_pattern_every_record_is_built_from_its_frame() -> None:
    records = many_records()
    prepared = unpack_for(encode_block(records).payload, None)
    assert isinstance(prepared, OpenedFrames)
    assert [r for _, r in frames_matching(prepared, None)] == [stored(r) for r in records]


def test_a_block_without_the_literal_decompresses_no_frame_and_no_head() -> None:
    prepared = unpack_for(
        encode_block(many_records()).payload, BlockSearch.of(re.compile("no such phrase"))
    )
    assert isinstance(prepared, OpenedFrames)
    assert (prepared.head, prepared.frames) == (None, [])


def test_the_mixed_stream_reads_back_through_its_frames() -> None:
    records = parse_plog(MIXED_STREAM)
    search = BlockSearch.of(re.compile("设备内存"))
    assert searched_by_frames(encode_block(records).payload, search) == [4]


# --- damage -----------------------------------------------------------------------------------


def damaged_frame(payload: bytes, index: int) -> bytes:
    framed = FramedBlock.read(payload)
    middle = (framed.frame_at[index] + framed.frame_at[index + 1]) // 2
    return payload[:middle] + bytes([payload[middle] ^ 0x5A]) + payload[middle + 1 :]


@pytest.mark.parametrize("search", [None, BlockSearch.of(re.compile("timed out"))])
def test_a_damaged_frame_costs_its_own_records_and_no_others(search: BlockSearch | None) -> None:
    records = many_records()
    payload = encode_block(records).payload
    framed = FramedBlock.read(payload)
    # A frame holding the literal, so that the search opens it (and beyond the first frame).
    holding = [i for i, r in enumerate(records) if "timed out" in r.original and i > 2]
    broken = next(f for f in range(framed.frame_count) if framed.bounds[f + 1] > holding[0])
    first, last = framed.bounds[broken], framed.bounds[broken + 1]
    prepared = unpack_for(damaged_frame(payload, broken), search)
    assert isinstance(prepared, OpenedFrames)
    found = frames_matching(prepared, search)
    pattern = search.in_text if search is not None else None
    expected = [
        i
        for i, record in enumerate(records)
        if not first <= i < last and (pattern is None or pattern.search(record.original))
    ]
    assert [
        i for i, record in found if pattern is None or pattern.search(record.original)
    ] == expected
    assert len(prepared.damage) == 1 and prepared.damage[0].startswith(f"frame {broken} ")


def test_a_damaged_frame_makes_the_whole_block_unreadable_to_a_whole_block_reader() -> None:
    payload = encode_block(many_records()).payload
    with pytest.raises(BlockFormatError):
        decode_block(damaged_frame(payload, 2))


def test_a_damaged_filter_is_caught_by_the_checksum_not_trusted() -> None:
    payload = encode_block(many_records()).payload
    framed = FramedBlock.read(payload)
    at = framed.dictionary_at - 1  # the last byte of the filters
    damaged = payload[:at] + bytes([payload[at] ^ 1]) + payload[at + 1 :]
    with pytest.raises(BlockFormatError, match="filters are damaged"):
        unpack_for(damaged, BlockSearch.of(re.compile("timed out")))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_changed_byte_anywhere_gives_block_format_error_or_true_records(
    data: st.DataObject,
) -> None:
    records = many_records(40)
    payload = encode_block(records).payload
    index = data.draw(st.integers(0, len(payload) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda byte: byte != payload[index]))
    damaged = payload[:index] + bytes([value]) + payload[index + 1 :]
    try:
        prepared = unpack_for(damaged, None)
        assert isinstance(prepared, OpenedFrames)
        found = frames_matching(prepared, None)
    except BlockFormatError:
        return
    assert all(record == stored(records[i]) for i, record in found)
