"""Multi-line records (formats doc §1.4) and the bounds that keep them finite."""

from __future__ import annotations

from npuwatch.parsers.stream import ParseLimits, StreamParser, parse_bytes
from npuwatch.records import Flag
from tests.conftest import parse, utc_clock

HEAD = "[ERROR] TSCH(-1,null):2025-07-19-22:01:05.099.500 612 (dieid:0,cpuid:0) [hwts.c:1] f: exc"


def test_lines_without_a_header_join_the_record_before_them() -> None:
    dump = [f"<exception_print>REG[{i}]=0x{i:04x}" for i in range(30)]
    records = parse("\n".join([HEAD, *dump, HEAD]) + "\n")
    assert [r.line_count for r in records] == [31, 1]
    assert records[0].original == "\n".join([HEAD, *dump])
    assert records[0].message.endswith("<exception_print>REG[29]=0x001d")


def test_an_embedded_newline_with_raw_bytes_stays_in_its_record() -> None:
    data = (HEAD + " attrs: \x12\x06Cast\n\x08*\x03 tail\n").encode()
    records = parse(data)
    assert len(records) == 1
    assert records[0].original.endswith("\x08*\x03 tail")


def test_the_last_record_of_a_file_is_flushed_even_without_a_newline() -> None:
    records = parse(HEAD + "\n" + HEAD + " last")
    assert [r.original.endswith("last") for r in records] == [False, True]


def test_a_record_of_500_lines_written_slowly_is_one_record() -> None:
    parser = StreamParser(utc_clock())
    done = parser.feed((HEAD + "\n").encode(), 0)
    offset = len(HEAD) + 1
    for i in range(499):
        chunk = f"<exception_print>R{i}=0\n".encode()
        done += parser.feed(chunk, offset)
        offset += len(chunk)
    assert done == []
    records = parser.flush()
    assert len(records) == 1 and records[0].line_count == 500
    assert records[0].end_offset == offset


def test_a_record_at_its_line_bound_continues_in_a_split_record() -> None:
    limits = ParseLimits(max_record_lines=10)
    lines = [HEAD] + [f"<exception_print>R{i}" for i in range(25)]
    data = ("\n".join(lines) + "\n").encode()
    records = parse_bytes(data, utc_clock(), limits=limits)
    assert [r.line_count for r in records] == [10, 10, 6]
    assert [bool(r.flags & Flag.SPLIT) for r in records] == [False, True, True]
    assert "\n".join(r.original for r in records) == "\n".join(lines)


def test_a_record_at_its_byte_bound_continues_in_a_split_record() -> None:
    limits = ParseLimits(max_record_bytes=400)
    lines = [HEAD] + ["x" * 90 for _ in range(10)]
    records = parse_bytes(("\n".join(lines) + "\n").encode(), utc_clock(), limits=limits)
    assert all(len(r.original) < 400 for r in records)
    assert "\n".join(r.original for r in records) == "\n".join(lines)


def test_a_ten_megabyte_line_is_cut_at_the_cap_and_flagged() -> None:
    limits = ParseLimits(max_line_bytes=64 * 1024)
    giant = "[INFO] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:" + "A" * 10_000_000
    records = parse_bytes((giant + "\nnext line\n").encode(), utc_clock(), limits=limits)
    assert records[0].flags & Flag.TRUNCATED
    assert len(records[0].original.split("\n")[0]) == 64 * 1024
    assert records[0].original.endswith("next line")


def test_cutting_never_splits_a_utf8_character() -> None:
    limits = ParseLimits(max_line_bytes=10)
    records = parse_bytes("中文中文中文\n".encode(), utc_clock(), limits=limits)
    assert records[0].original == "中文中"  # 9 bytes: the 10th would split a character
    assert not records[0].flags & Flag.INVALID_ENCODING


def test_lines_before_any_record_start_an_unparsed_record() -> None:
    records = parse("some banner\n.....\n" + HEAD + "\n")
    assert records[0].format == "unparsed"
    assert records[0].flags & Flag.UNPARSED
    assert records[0].line_count == 2


def test_offsets_count_bytes_so_that_a_reader_can_resume() -> None:
    data = ("[INFO] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:中文\n" + HEAD + "\n").encode()
    first, second = parse(data)
    assert first.offset == 0
    assert first.end_offset == second.offset == data.index(b"[ERROR]")
    assert second.end_offset == len(data)


def test_feeding_in_pieces_gives_the_same_records_as_feeding_at_once() -> None:
    lines = [HEAD, "<exception_print>A", "[INFO] GE(1,p):2025-01-01-00:00:00.000.000 x", "tail"]
    data = ("\n".join(lines) + "\n").encode()
    whole = [r.to_document() for r in parse(data)]
    parser = StreamParser(utc_clock())
    pieces = []
    offset = 0
    for line in data.split(b"\n")[:-1]:
        line += b"\n"
        pieces += parser.feed(line, offset)
        offset += len(line)
    pieces += parser.flush()
    assert [r.to_document() for r in pieces] == whole


def test_continuation_lines_stay_in_the_message_of_styles_with_tags() -> None:
    (record,) = parse(
        "[TRACE] GE(1,p):2025-01-01-00:00:00.000.000 [status:STOP] [ge_api.cc:240]1 Fin:done\n"
        "  second line\n"
    )
    assert record.tags == ["status:STOP"]
    assert record.message == "done\n  second line"
