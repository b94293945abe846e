"""Properties that must hold for every input: nothing raises, nothing is lost, the C first pass
and its Python reference agree."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from npuwatch.parsers.decoding import decode_line
from npuwatch.parsers.first_pass import NATIVE, scan_chunk, scan_chunk_python
from npuwatch.parsers.slog import SlogRecord
from npuwatch.parsers.stream import ParseLimits, StreamParser, parse_bytes
from npuwatch.record_schema import LogRecord
from npuwatch.records import SourceInfo
from tests.conftest import utc_clock

# Fragments of real formats, so that random input reaches deep into the parsers.
FRAGMENTS = [
    "[ERROR] ",
    "[INFO] ",
    "[EVENT]",
    "ERR0R] ",
    "RUNTIME(",
    "HCCL(",
    "-1,null):",
    "123,python3):",
    "2025-03-11-08:12:40.117.305 ",
    "1970-01-01-08:00:00.000.000 ",
    "2025-03-11 08:12:40.117.305",
    "[stream.cc:12]",
    "5188 Func:",
    " [5231]",
    "[tid:7]",
    ">>> ",
    "(tid:9) ",
    "[ascend][curpid: 1, 2]",
    "[drv][devmm][f 1]",
    "EZ9999: ",
    "[PID: 12] ",
    "Title(EI0002): ",
    "error code is 507035",
    "[rank3]: ",
    "(VllmWorker TP1 pid=9) ",
    "ERROR 09-07 01:11:09 [a.py:1] ",
    "> ",
    "\r",
    "\t",
    "        ",
    "<exception_print>",
    "[E928 07:22:40.1 c.ts:4] ",
    "[W N.cpp:3] ",
    "中文",
    "\x00",
    "E30009",
    "W40001",
    "(dieid:0,cpuid:1) ",
    "[status:INIT]",
    "RuntimeError: ",
]
line_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=10).map("".join)
stream_bytes = st.one_of(
    st.binary(max_size=600),
    st.lists(line_text, max_size=12).map(
        lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
    ),
    st.lists(st.binary(max_size=40) | line_text.map(str.encode), max_size=12).map(b"\n".join),
)


def _expected_text(data: bytes, limits: ParseLimits) -> str:
    """The input as the parser must give it back: each line decoded, cut lines cut."""
    lines = data.split(b"\n")
    trailing_newline = lines[-1] == b""
    if trailing_newline:
        lines.pop()
    texts = []
    for raw in lines:
        if len(raw) > limits.max_line_bytes:
            from npuwatch.parsers.decoding import cut_line

            raw = cut_line(raw, limits.max_line_bytes)
        texts.append(decode_line(raw)[0])
    return "\n".join(texts) + ("\n" if trailing_newline and lines else "")


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(stream_bytes)
@example(b"")
@example(b"\n")
@example(b"\n\n\xff")
@example(b"\x00" * 10)
def test_any_bytes_parse_without_error_and_give_back_the_input(data: bytes) -> None:
    limits = ParseLimits(max_line_bytes=64, max_record_lines=5, max_record_bytes=200)
    records = parse_bytes(
        data, utc_clock(), path="debug/plog/plog-1_20250101000000000.log", limits=limits
    )
    joined = "\n".join(r.original for r in records)
    if records and data.endswith(b"\n"):
        joined += "\n"
    assert joined == _expected_text(data, limits)
    for record in records:
        LogRecord.model_validate(record.to_document())
    if records:
        assert records[0].offset == 0
        assert records[-1].end_offset == len(data)
        for before, after in itertools.pairwise(records):
            assert before.end_offset == after.offset


@settings(max_examples=300, deadline=None)
@given(stream_bytes, st.integers(min_value=1, max_value=7))
def test_feeding_at_any_line_boundaries_gives_the_same_records(data: bytes, every: int) -> None:
    whole = [r.to_document() for r in parse_bytes(data, utc_clock())]
    parser = StreamParser(utc_clock())
    lines = [line + b"\n" for line in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]  # the last piece had no newline after it
    pieces = []
    offset = 0
    for start in range(0, len(lines), every):
        chunk = b"".join(lines[start : start + every])
        pieces += parser.feed(chunk, offset)
        offset += len(chunk)
    pieces += parser.flush()
    assert [r.to_document() for r in pieces] == whole


def _items(scan, data: bytes):  # type: ignore[no-untyped-def]
    clock = utc_clock()
    out = []
    for item in scan(data, 7, SlogRecord, clock.minutes, clock.slog_minute_us, 48, SourceInfo()):
        out.append(item if isinstance(item, tuple) else sorted(vars(item).items()))
    return out


@settings(max_examples=600, deadline=None)
@given(stream_bytes)
@example(b"[INFO] A(1,p):2025-01-01-00:00:00.000.000 E12345 EE12345 E123456 xE12345\r\n")
@example(b"[INFO] A(99999999999999999999999,p):2025-01-01-00:00:00.000.000 x\n")
@example(
    b"[INFO] A(1,p):1970-01-01-00:00:00.000.000 \xe4\xb8\xad\n[INFO] A(1,p):2025-02-30-00:00:00.000.000 x"
)
def test_the_c_first_pass_agrees_with_the_python_reference(data: bytes) -> None:
    assert _items(scan_chunk, data) == _items(scan_chunk_python, data)


def test_the_c_first_pass_is_built_here() -> None:
    # CI builds the extension; without a compiler npuwatch falls back to the reference.
    assert NATIVE
