"""Blocks: records go in, the same stored fields come out; a summary and an index of the notable
records are computed on the way; a damaged blob is reported as such."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.journal.block import (
    BlockFormatError,
    BlockSummary,
    NotableRecord,
    columns_of,
    decode_block,
    encode_block,
    read_columns,
    unpack,
)
from npuwatch.records import Flag, Record
from tests.journal.conftest import epoch_us, parse_plog, plog_line, stored

MIXED_STREAM = b"".join(
    [
        b"orphan text before any header\n",
        b"[ERROR] HCCL(4100,python3):2025-09-14-09:37:31.402.855 [transport.cc:88] [4103]link to rank 5 timed out, error code E30009\r\n",
        b"[INFO] GE(4100,python3):2025-09-14-09:37:32.000.001 [graph_builder.cc:12] [4101]compile graph ok\n",
        b"    node count 42, edges 57\n",
        b"[WARNING] RUNTIME(4100,python3):2025-09-14-09:37:33.000.000 [stream.cc:31] [4101]stream 7 is slow\n",
        "[INFO] RUNTIME(4100,python3):2025-09-14-09:37:34.000.000 [stream.cc:32] [4101]设备内存正常\n".encode(),
        "[INFO] ASCENDCL(4100,python3):2025-09-14-09:37:35.000.000 [acl.cc:9] [4101]错误已恢复\n".encode(
            "gbk"
        ),
        b"[INFO] GE(4100,python3):2025-09-14-09:37:36.000.000 [model.cc:5] [4101]earlier failure EE1001 cleared; see also EI0002\n",
        b"[EVENT] IMP(-1,null):2025-09-14-09:37:37.000.000 123 (device_id:5 die_id:0) [IMP] temperature high\n",
    ]
)
"""A headerless line, CRLF, a continuation line, UTF-8 and GBK Chinese, codes on an INFO line,
and an EVENT whose body names its device."""


@pytest.fixture
def mixed() -> list[Record]:
    return parse_plog(MIXED_STREAM)


# --- round trip -------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False], ids=["compressed", "uncompressed"])
def test_a_block_gives_back_every_stored_field_of_its_records(
    mixed: list[Record], compress: bool
) -> None:
    decoded = decode_block(encode_block(mixed, compress=compress).payload)
    assert decoded == [stored(record) for record in mixed]


def test_the_stored_fields_keep_their_exact_values(mixed: list[Record]) -> None:
    orphan, error, multi_line, _, utf8, gbk, with_codes, event = decode_block(
        encode_block(mixed).payload
    )
    assert (orphan.timestamp_us, orphan.level, orphan.logger, orphan.pid) == (
        None,
        None,
        None,
        None,
    )
    assert orphan.flags == Flag.UNPARSED  # the internal OTHER_FORMAT bit is not kept
    assert (orphan.offset, orphan.end_offset) == (0, 30)
    assert error.timestamp_us == epoch_us("2025-09-14T09:37:31.402855")
    assert (error.level, error.logger, error.pid, error.error_codes) == (
        "ERROR",
        "HCCL",
        4100,
        ["E30009"],
    )
    assert error.flags == 0  # HAS_CODES is internal
    assert error.original.endswith("error code E30009\r")
    assert (error.offset, error.end_offset) == (30, 154)
    assert multi_line.original.endswith("compile graph ok\n    node count 42, edges 57")
    assert utf8.original.endswith("[4101]设备内存正常")
    assert gbk.original.endswith("[4101]错误已恢复")
    assert gbk.flags == Flag.INVALID_ENCODING
    assert with_codes.error_codes == ["EE1001", "EI0002"]
    assert (event.level, event.logger, event.pid) == ("EVENT", "IMP", -1)
    assert (event.offset, event.end_offset) == (679, 778)


def test_records_without_any_time_come_back_without_a_time() -> None:
    records = [Record("first line without a time", "other"), Record("second one", "other")]
    block = encode_block(records)
    decoded = decode_block(block.payload)
    assert [record.timestamp_us for record in decoded] == [None, None]
    assert (block.summary.first_us, block.summary.last_us) == (None, None)


def test_a_block_with_more_than_256_level_and_module_names_round_trips() -> None:
    lines = "".join(plog_line(index, module=f"MOD{index}") + "\n" for index in range(300))
    records = parse_plog(lines)
    decoded = decode_block(encode_block(records).payload)
    assert [record.logger for record in decoded] == [f"MOD{index}" for index in range(300)]
    assert decoded == [stored(record) for record in records]


def test_an_empty_batch_is_an_empty_block() -> None:
    block = encode_block([])
    assert decode_block(block.payload) == []
    assert block.summary == BlockSummary(0, None, None, " ", " ", " ", " ")
    assert block.notable == []


_CODE = st.from_regex(r"[EW][0-9A-Z][0-9]{4}", fullmatch=True)
_NAME = st.none() | st.sampled_from(["ERROR", "INFO", "HCCL", "GE", ""]) | st.text(max_size=6)


@st.composite
def records(draw: st.DrawFn) -> Record:
    record = Record(draw(st.text(max_size=30)), "slog")
    # Every int64 but the smallest, which stands for "no time" inside a block.
    record.timestamp_us = draw(st.none() | st.integers(-(2**63) + 1, 2**63 - 1))
    record.level = draw(_NAME)
    record.logger = draw(_NAME)
    record.pid = draw(st.none() | st.integers(-2, 2**22))
    record.error_codes = draw(st.lists(_CODE, max_size=3))
    record.flags = draw(st.integers(0, 2**18 - 1))
    record.offset = draw(st.none() | st.integers(0, 2**40))
    record.end_offset = draw(st.none() | st.integers(0, 2**40))
    return record


@settings(max_examples=300, deadline=None)
@given(st.lists(records(), max_size=12), st.booleans())
def test_any_records_round_trip_through_a_block(batch: list[Record], compress: bool) -> None:
    block = encode_block(batch, compress=compress)
    assert decode_block(block.payload) == [stored(record) for record in batch]
    times = [record.timestamp_us for record in batch if record.timestamp_us is not None]
    assert block.summary.count == len(batch)
    assert block.summary.first_us == min(times, default=None)
    assert block.summary.last_us == max(times, default=None)


# --- summary and notable records -------------------------------------------------------------


def test_the_summary_names_the_time_range_and_every_level_module_code_and_pid(
    mixed: list[Record],
) -> None:
    block = encode_block(mixed)
    assert block.summary == BlockSummary(
        count=8,
        first_us=epoch_us("2025-09-14T09:37:31.402855"),
        last_us=epoch_us("2025-09-14T09:37:37"),
        levels=" ERROR EVENT INFO WARNING ",
        modules=" ASCENDCL GE HCCL IMP RUNTIME ",
        codes=" E30009 EE1001 EI0002 ",
        pids=" -1 4100 ",
    )
    assert block.raw_bytes == len("\n".join(record.original for record in mixed).encode())


def test_the_summary_of_a_block_without_levels_or_codes_is_a_lone_space() -> None:
    summary = encode_block(parse_plog(b"no header here\n")).summary
    assert (summary.levels, summary.modules, summary.codes, summary.pids) == (" ", " ", " ", " ")


def test_only_warnings_and_above_and_records_with_codes_are_notable(
    mixed: list[Record],
) -> None:
    notable = encode_block(mixed).notable
    assert notable == [
        NotableRecord(
            position=1,
            timestamp_us=epoch_us("2025-09-14T09:37:31.402855"),
            level="ERROR",
            logger="HCCL",
            pid=4100,
            code="E30009",
            codes=" E30009 ",
            device=None,
            offset=30,
            original=mixed[1].original,
        ),
        NotableRecord(
            position=3,
            timestamp_us=epoch_us("2025-09-14T09:37:33"),
            level="WARNING",
            logger="RUNTIME",
            pid=4100,
            code=None,
            codes=" ",
            device=None,
            offset=279,
            original=mixed[3].original,
        ),
        NotableRecord(
            position=6,
            timestamp_us=epoch_us("2025-09-14T09:37:36"),
            level="INFO",
            logger="GE",
            pid=4100,
            code="EE1001",
            codes=" EE1001 EI0002 ",
            device=None,
            offset=560,
            original=mixed[6].original,
        ),
        NotableRecord(
            position=7,
            timestamp_us=epoch_us("2025-09-14T09:37:37"),
            level="EVENT",
            logger="IMP",
            pid=-1,
            code=None,
            codes=" ",
            device=5,
            offset=679,
            original=mixed[7].original,
        ),
    ]


def test_a_notable_record_takes_its_device_from_the_body_before_the_file_path() -> None:
    data = (
        b"[ERROR] IMP(-1,null):2025-09-14-09:37:31.000.000 123 (device_id:5 die_id:0) [IMP] temperature high\n"
        b"[ERROR] GE(4100,python3):2025-09-14-09:37:32.000.000 [graph.cc:7] [4101]graph run failed\n"
    )
    in_device_folder = parse_plog(data, path="/x/run/device-2/device-4100_20250914093300120.log")
    in_plog_folder = parse_plog(data)
    assert [n.device for n in encode_block(in_device_folder).notable] == [5, 2]
    assert [n.device for n in encode_block(in_plog_folder).notable] == [5, None]


def test_levels_below_warning_without_codes_are_not_notable() -> None:
    lines = "".join(plog_line(index, level) + "\n" for index, level in enumerate(["INFO", "DEBUG"]))
    assert encode_block(parse_plog(lines)).notable == []


# --- the two forms, and damage ----------------------------------------------------------------


def test_a_compressed_block_is_marked_and_smaller_than_the_same_block_uncompressed() -> None:
    records = parse_plog("".join(plog_line(index) + "\n" for index in range(200)))
    compressed = encode_block(records, compress=True)
    plain = encode_block(records, compress=False)
    assert (compressed.payload[:1], plain.payload[:1]) == (b"f", b"-")
    assert read_columns(compressed.payload) == columns_of(unpack(plain.payload))
    assert len(compressed.payload) < len(plain.payload) // 4
    assert compressed.raw_bytes == plain.raw_bytes
    assert decode_block(compressed.payload) == decode_block(plain.payload)


def _plain_payload() -> bytes:
    """An uncompressed block of one unparsed record: no level or module (dictionary `[null]`),
    one flag and no codes (sparse columns `[[[0, 1]], []]`)."""
    return encode_block(parse_plog(b"a line without a header\n"), compress=False).payload


def _replace(payload: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new) and payload.count(old) == 1
    return payload.replace(old, new)


CORRUPTIONS = {
    "unknown marker": lambda p: b"x" + p[1:],
    "empty": lambda p: b"",
    "marker only": lambda p: p[:1],
    "cut in the header": lambda p: p[:8],
    "cut in the arrays": lambda p: p[:30],
    "cut in the text": lambda p: p[:-3],
    "extra bytes after the text": lambda p: p + b"tail",
    "newer format version": lambda p: p[:1] + bytes([4]) + p[2:],
    "older format version": lambda p: p[:1] + bytes([1]) + p[2:],
    "record count too large": lambda p: p[:2] + struct.pack("<I", 10**6) + p[6:],
    "index width not B or H": lambda p: _replace(p, b"B\x00\x00[null]", b"d\x00\x00[null]"),
    "level outside the dictionary": lambda p: _replace(p, b"B\x00\x00[null]", b"B\x01\x00[null]"),
    "module outside the dictionary": lambda p: _replace(p, b"B\x00\x00[null]", b"B\x00\xff[null]"),
    "columns not a list": lambda p: _replace(p, b"[[[0, 1]], []]", b"12345678901234"),
    "dictionary not a list": lambda p: _replace(p, b"[null][[[", b"999999[[["),
    "text not UTF-8": lambda p: p[:-1] + b"\xff",
}


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_a_damaged_uncompressed_block_raises_block_format_error(damage: str) -> None:
    with pytest.raises(BlockFormatError, match="unreadable block"):
        decode_block(CORRUPTIONS[damage](_plain_payload()))


def test_a_compressed_block_with_a_changed_byte_raises_block_format_error() -> None:
    payload = encode_block(parse_plog(plog_line(1) + "\n")).payload
    middle = len(payload) // 2
    damaged = payload[:middle] + bytes([payload[middle] ^ 0x55]) + payload[middle + 1 :]
    with pytest.raises(BlockFormatError):
        decode_block(damaged)


def test_a_block_format_error_is_a_value_error_and_keeps_its_cause() -> None:
    with pytest.raises(BlockFormatError) as caught:
        decode_block(b"z" + b"not deflate data")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value.__cause__, zlib.error)


_SAMPLE = parse_plog(MIXED_STREAM)


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.data())
def test_every_cut_of_a_block_raises_block_format_error(
    compress: bool, data: st.DataObject
) -> None:
    payload = encode_block(_SAMPLE, compress=compress).payload
    cut = data.draw(st.integers(0, len(payload) - 1))
    with pytest.raises(BlockFormatError):
        decode_block(payload[:cut])


@settings(max_examples=500, deadline=None)
@given(st.booleans(), st.data())
def test_a_changed_byte_gives_block_format_error_or_records_never_another_exception(
    compress: bool, data: st.DataObject
) -> None:
    payload = encode_block(_SAMPLE, compress=compress).payload
    index = data.draw(st.integers(0, len(payload) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda byte: byte != payload[index]))
    damaged = payload[:index] + bytes([value]) + payload[index + 1 :]
    try:
        decoded = decode_block(damaged)
    except BlockFormatError:
        return
    if compress:  # zstd's checksum: whatever decodes is the block as it was written
        assert decoded == [stored(record) for record in _SAMPLE]
