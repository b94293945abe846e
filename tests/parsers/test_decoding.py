"""Bytes that are not clean UTF-8 (RELIABILITY.md row 23)."""

from __future__ import annotations

from npuwatch.parsers.decoding import ESCAPED, GBK, cut_line, decode_line
from npuwatch.records import Flag
from tests.conftest import parse


def test_utf8_is_decoded_as_is() -> None:
    assert decode_line("中文".encode()) == ("中文", None)


def test_clean_gbk_text_is_decoded_as_gbk_and_can_be_encoded_back() -> None:
    raw = "设备初始化失败".encode("gbk")
    text, encoding = decode_line(raw)
    assert (text, encoding) == ("设备初始化失败", GBK)
    assert text.encode("gbk") == raw


def test_binary_garbage_keeps_its_bytes_as_escapes() -> None:
    text, encoding = decode_line(b"ok \xff\x00\x81 end")
    assert encoding == ESCAPED
    assert text == "ok \\xff\x00\\x81 end"


def test_records_with_odd_bytes_are_flagged_and_say_how_they_were_decoded() -> None:
    (record,) = parse(b"[INFO] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:\xd6\xd0\xce\xc4\n")
    assert record.flags & Flag.INVALID_ENCODING
    assert record.encoding == GBK
    assert record.message == "中文"


def test_cut_line_steps_back_from_a_split_character() -> None:
    assert cut_line("ab中".encode(), 4) == b"ab"
    assert cut_line(b"abcdef", 4) == b"abcd"
