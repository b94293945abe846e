"""Any bytes a log file can hold: the parser gives every line back in exactly one record, fed
whole or at any line ends, and everything downstream of it (the record's fields and document, the
rules, the journal and the shipping of what it holds, `npuwatch parse`) takes every record without
an exception."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from npuwatch.agent.journal_stage import JournalStage, JournalTiming
from npuwatch.agent.queue import ByteQueue
from npuwatch.handoff import JournalWork
from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import Journal
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.decoding import cut_line, decode_line
from npuwatch.parsers.paths import describe_path
from npuwatch.parsers.stream import ParseLimits, StreamParser, parse_bytes
from npuwatch.parsers.timestamps import LocalClock, first_full_date_us
from npuwatch.record_schema import LogRecord
from npuwatch.records import Flag, Record
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import RuleSet, default_locations, load_rules
from npuwatch.sinks.search.documents import block_actions
from tests.conftest import utc_clock
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.log_text import log_path, log_stream

PID_PAST_64_BITS = (
    b"[ERROR] RUNTIME(9223372036854775808,python3):2025-03-11-08:12:40.117.305 [a.cc:1]1 x\n"
)
LAST_SECOND_OF_9999 = (
    b"[ERROR] A(1,p):9999-12-31-23:59:60.000.000 a leap second past the last date\n"
)
THIRTIETH_OF_FEBRUARY = b"[ERROR] RUNTIME(1,python3):2025-02-30-08:12:40.117.305 [a.cc:1]1 x\n"
CONSOLE_PID_PAST_64_BITS = (
    b"EZ9999: [PID: 99999999999999999999] 2025-08-03-16:40:01.998.410 The error\n"
)

limits = st.builds(
    ParseLimits,
    max_line_bytes=st.integers(16, 300),
    max_record_lines=st.integers(1, 6),
    max_record_bytes=st.integers(32, 600),
) | st.just(ParseLimits())


def lines_of(data: bytes) -> list[bytes]:
    """The lines of a stream, without their newlines (a last line without one counts)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


@fuzz_settings(200)
@given(log_stream(), log_path(), limits)
@example(
    PID_PAST_64_BITS + THIRTIETH_OF_FEBRUARY,
    "/log/debug/plog/plog-1_20250230000000000.log",
    ParseLimits(),
)
@example(b"\n" * 50, "/log/x.log", ParseLimits())
@example(LAST_SECOND_OF_9999, "/log/x.log", ParseLimits())
def test_every_line_of_any_stream_is_given_back_by_exactly_one_record(
    data: bytes, path: str, bounds: ParseLimits
) -> None:
    records = parse_bytes(data, utc_clock(), path=path, limits=bounds)
    assert sum(record.line_count for record in records) == len(lines_of(data))
    position = 0
    for record in records:
        assert record.offset == position
        assert record.end_offset is not None and record.end_offset > position
        raw_lines = lines_of(data[position : record.end_offset])
        assert record.line_count == len(raw_lines)
        expected = []
        for raw in raw_lines:
            if len(raw) > bounds.max_line_bytes:
                raw = cut_line(raw, bounds.max_line_bytes)
                assert record.flags & Flag.TRUNCATED
            expected.append(decode_line(raw)[0])
        assert record.original == "\n".join(expected)
        position = record.end_offset
    assert position == len(data)


@fuzz_settings(150)
@given(log_stream(), st.data())
def test_a_stream_fed_at_any_line_ends_gives_the_records_it_gives_whole(
    data: bytes, draw: st.DataObject
) -> None:
    whole = [record.to_document() for record in parse_bytes(data, utc_clock())]
    ends = [index + 1 for index, byte in enumerate(data) if byte == ord("\n")]
    cuts = sorted(draw.draw(st.sets(st.sampled_from(ends)) if ends else st.just(set())))
    parser = StreamParser(utc_clock())
    fed = []
    for start, end in itertools.pairwise([0, *cuts, len(data)]):
        fed += parser.feed(data[start:end], start)
    fed += parser.flush()
    assert [record.to_document() for record in fed] == whole


def read_every_field(record: Record) -> dict[str, object]:
    """Every field the pipeline reads of a record (the body's are derived on first access),
    and its published document, validated and serialised as the sinks do."""
    for name in ("message", "origin_file", "origin_line", "thread_id", "function"):
        getattr(record, name)
    for name in ("submodule", "tags", "rank", "device", "text", "lowered_text"):
        getattr(record, name)
    document = record.to_document()
    LogRecord.model_validate(document)
    json.dumps(document, ensure_ascii=False, allow_nan=False)
    return document


@fuzz_settings(200)
@given(log_stream(), log_path())
@example(
    PID_PAST_64_BITS + CONSOLE_PID_PAST_64_BITS, "/log/debug/plog/plog-1_20250914093300120.log"
)
def test_every_field_and_document_of_any_record_can_be_read(data: bytes, path: str) -> None:
    for record in parse_bytes(data, utc_clock(), path=path):
        read_every_field(record)


@fuzz_settings(100)
@given(log_stream(), log_path())
def test_the_default_rules_take_any_stream(data: bytes, path: str) -> None:
    engine = RuleEngine(default_rules())
    parser = StreamParser(utc_clock(), path=path, batch_index=True)
    stream = engine.stream(parser.source)
    records = parser.feed(data)
    engine.process(records, stream, data, parser.last_batch)
    engine.process(parser.flush(), stream)
    stream.close()
    for event in engine.flush():
        json.dumps(event.to_document(), ensure_ascii=False, allow_nan=False)


_RULES: list[RuleSet] = []


def default_rules() -> RuleSet:
    if not _RULES:
        _RULES.append(load_rules(default_locations()))
    return _RULES[0]


@fuzz_settings(60)
@given(data=log_stream(), path=log_path())
@example(data=PID_PAST_64_BITS, path="/log/debug/plog/plog-1_20250914093300120.log")
@example(data=b"x\n", path="/log/debug/plog/plog-99999999999999999999_20250914093300120.log")
@example(data=b"x\n", path="/log/debug/device-99999999999999999999/device-7_20250914093300120.log")
def test_the_journal_keeps_every_record_of_any_file_and_ships_it(
    data: bytes, path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """What the agent's journal thread writes of a file (JournalStage.build_batch, a commit),
    read back block by block as the shipper reads it, and turned into the documents it sends."""
    records = parse_bytes(data, utc_clock(), path=path)
    if not records:
        return
    folder = tmp_path_factory.mktemp("journal")
    journal = Journal(folder)
    journal.open()
    stage = JournalStage(journal, ByteQueue(1 << 20), SelfMetrics(), JournalTiming(), "UTC")
    try:
        work = JournalWork("file-key", records[0].source, records, size=len(data))
        journal.commit(stage.build_batch([work]))
    finally:
        journal.close()
    stored, shipped = [], []
    with JournalReader(folder) as reader:
        position = Position()
        while page := reader.blocks_after(position):
            position = page[-1][0]
            for _, block in page:
                stored += decode_block(block.payload)
                for action in block_actions(block, "fuzz", "node-1"):
                    assert action is not None
                    shipped.append(orjson.dumps(action.document, option=orjson.OPT_NON_STR_KEYS))
    assert [(r.original, r.offset, r.end_offset) for r in stored] == [
        (r.original, r.offset, r.end_offset) for r in records
    ]
    assert len(shipped) == len(records)
    assert not [t for t in threading.enumerate() if t.name == "npuwatch-journal"]


@fuzz_settings(200)
@given(log_stream())
@example(b"2025-02-30 00:00 a date that never was\n")
@example(b"[INFO] GE(1,p):2023-02-29-00:00:00.000.000 not a leap year\n")
def test_the_year_of_any_file_is_looked_for_without_error(data: bytes) -> None:
    found = first_full_date_us(data)
    assert found is None or isinstance(found, int)


@fuzz_settings(200)
@given(log_path())
def test_any_file_name_describes_a_source(path: str) -> None:
    source = describe_path(path, LocalClock(utc_clock().zone))
    assert source.path == path


@fuzz_settings(40)
@given(data=log_stream(), path=log_path())
@example(data=THIRTIETH_OF_FEBRUARY, path="/log/debug/plog/plog-1_20250914093300120.log")
def test_npuwatch_parse_prints_one_document_per_record_of_any_file(
    data: bytes, path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("parse")
    name = Path(path).name
    file = folder / name
    file.write_bytes(data)
    outcome = run_in_process("parse", str(file), "--timezone", "UTC")
    assert_kept_the_contract(outcome, codes=(0,))
    documents = [json.loads(line) for line in outcome.stdout.split("\n") if line]
    expected = parse_bytes(data, utc_clock(), path=str(file))
    assert [d["event"]["original"] for d in documents] == [r.original for r in expected]
