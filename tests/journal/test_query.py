"""The `grep` planner: every question gets exactly the records a filter over all of them gives.

The journal here is generated: two hosts, a plog and two device logs per host and a training log,
levels DEBUG to EVENT, several modules and pids, records with none, one or two error codes (some
in continuation lines), multi-line records, plog records whose device is only in the body (IMP),
a record without a time, and each file cut at random points into blocks over three segments.
The expected answer is computed by decoding every block and testing every record.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.handoff import EventRow
from npuwatch.journal.block import decode_block
from npuwatch.journal.event_search import search_events
from npuwatch.journal.query import search
from npuwatch.journal.question import Question
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.journal.segment import Segment
from npuwatch.journal.store import list_segments, segment_path
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from tests.journal.journal_builder import (
    JournalContents,
    LogFile,
    cann_line,
    epoch_us,
    newest_sequence,
    rule_events,
    write_journal,
)

T0 = epoch_us("2025-09-14T09:30:00")
PLOG = "/r/debug/plog/plog-3300_20250914093000120.log"
HOSTS = ("node-a", "node-b")
MODULES = ("HCCL", "GE", "RUNTIME", "ASCENDCL", "DRV")
LEVELS = ("DEBUG", "DEBUG", "INFO", "INFO", "INFO", "INFO", "WARNING", "WARNING", "ERROR", "ERROR", "EVENT")  # fmt: skip
CODES = ("E30009", "EI0002", "E19999", "EI0001", "W40011", "EL0004")
MESSAGES = (
    "notify wait timeout",
    "alloc memory failed",
    "stream sync done",
    "build graph resnet50",
    "link status down",
    "heartbeat lost",
    "load kernel TransData",
)
PATTERNS = (
    "timeout",
    "memory",
    "E3\\d{4}",
    "detail 1",
    "^\\[ERROR\\]",
    "(?i)LINK STATUS",
    "device_id:3",
    "Rank\\[",
    "no such text anywhere",
)


# --- the generated journal ------------------------------------------------------------------


def cann_lines(
    rng: random.Random, pids: tuple[int, ...], imp_devices: tuple[int, ...]
) -> list[str]:
    """Fifty CANN records: random levels, modules, pids, codes and continuation lines."""
    lines = []
    when = T0 + rng.randint(0, 1_000_000)
    for number in range(50):
        when += rng.choice((0, 1, 137, 250_000, 1_000_000))
        level = rng.choice(LEVELS)
        pid = rng.choice(pids)
        codes = rng.sample(CODES, rng.choice((0, 0, 0, 0, 1, 1, 2)))
        message = rng.choice(MESSAGES) + "".join(f", error code {code}" for code in codes)
        if imp_devices and rng.random() < 0.25:
            device = rng.choice(imp_devices)
            module, body = "IMP", f"{number} (device_id:{device} die_id:0) [IMP] {message}"
        else:
            module = rng.choice(MODULES)
            body = f"[{module.lower()}_{number % 7}.cc:{100 + number}]{pid + 1} Func{number % 3}: {message}"
        lines.append(cann_line(level, module, pid, when, body))
        for extra in range(rng.choice((0, 0, 0, 1, 2))):
            cause = f" caused by {rng.choice(CODES)}" if rng.random() < 0.3 else ""
            lines.append(f"    detail {extra} of record {number}: {rng.choice(MESSAGES)}{cause}")
    return lines


def training_lines(second: int) -> list[str]:
    """A training script's log: Python logging, torch.distributed and a line with no time."""
    return [
        "Traceback preamble written before any header",
        f"2025-09-14 09:30:{second:02d},218 - lmdeploy - ERROR - model_agent.py:489 - Rank[2] failed.",
        f"2025-09-14 09:30:{second + 1:02d},000 - lmdeploy - INFO - model_agent.py:120 - step 3 done",
        f"[285] [2025-09-14 09:30:{second + 2:02d}:644] torch.distributed: [ERROR] [479] notify wait timeout, error code is 507014",
        f"[Toolkit] [2025-09-14 09:30:{second + 3:02d}] [INFO] Install package success.",
    ]


def generated_files(rng: random.Random) -> list[LogFile]:
    files = []
    for number, host in enumerate(HOSTS):
        pid = 3300 + 100 * number
        plog = f"/r/debug/plog/plog-{pid}_20250914093000120.log"
        files.append(LogFile(plog, host, cann_lines(rng, (pid, pid + 11), (0, 1, 3))))
        for device in (0, 3):
            path = f"/r/debug/device-{device}/device-{pid}_20250914093000120.log"
            files.append(LogFile(path, host, cann_lines(rng, (pid, 4096 + device), ())))
        files.append(LogFile("/r/train/train.log", host, training_lines(10 + 10 * number)))
    return files


@dataclass(frozen=True)
class Stored:
    """A record as the journal holds it, where it is, and the device its document names."""

    segment: int
    block_id: int
    position: int
    source: FileSource
    record: StoredRecord
    device: int | None


@dataclass
class Corpus:
    directory: Path
    contents: JournalContents
    stored: list[Stored]

    def values(self, name: str) -> list[Any]:
        """The values of a filter that occur in the journal, in a stable order."""
        records = [item.record for item in self.stored]
        found: dict[str, list[Any]] = {
            "levels": [r.level for r in records],
            "modules": [r.logger for r in records],
            "codes": [code for r in records for code in r.error_codes],
            "categories": [row.category for row in self.contents.events],
            "device": [item.device for item in self.stored],
            "host": [item.source.host for item in self.stored],
            "pid": [r.pid for r in records],
            "times": [r.timestamp_us for r in records],
        }
        return sorted({value for value in found[name] if value is not None})


def read_stored(directory: Path) -> Iterator[Stored]:
    """Every record of the journal, decoded from every block, in journal order."""
    clock = LocalClock(resolve_timezone("UTC"))
    for sequence, path in list_segments(directory):
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT id, file_key, path, host, kind, channel, device, file_pid, timezone, "
                "payload FROM blocks ORDER BY id"
            ).fetchall()
        for block_id, *columns, payload in rows:
            source = FileSource(*columns)
            for position, record in enumerate(decode_block(payload)):
                # The document's device: the one the body names, else the folder's.
                parsed = parse_bytes(record.original.encode(), clock, path=source.path)
                device = parsed[0].device if parsed[0].device is not None else source.device
                yield Stored(sequence, block_id, position, source, record, device)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    directory = tmp_path_factory.mktemp("journal")
    files = generated_files(random.Random(20250914))
    contents = write_journal(directory, files, runs=8, segments=3, rng=random.Random(7))
    return Corpus(directory, contents, list(read_stored(directory)))


def answers(item: Stored, question: Question, triggers: set[tuple[str, int | None]]) -> bool:
    """What `grep` means by each filter, tested on one record."""
    record = item.record
    time = record.timestamp_us
    return (
        (question.pattern is None or question.pattern.search(record.original) is not None)
        and (question.since_us is None or (time is not None and time >= question.since_us))
        and (question.until_us is None or (time is not None and time <= question.until_us))
        and (not question.levels or record.level in question.levels)
        and (not question.modules or record.logger in question.modules)
        and (not question.codes or not question.codes.isdisjoint(record.error_codes))
        and (not question.categories or (item.source.file_key, record.offset) in triggers)
        and (question.device is None or item.device == question.device)
        and (question.host is None or item.source.host == question.host)
        and (question.pid is None or record.pid == question.pid)
    )


def described(
    segment: int, block_id: int, position: int, source: FileSource, record: StoredRecord
) -> tuple[object, ...]:
    """A hit as the tests compare them: where it is, its file, and every field kept."""
    return (
        segment,
        block_id,
        position,
        source,
        record.timestamp_us,
        record.level,
        record.logger,
        record.pid,
        record.error_codes,
        record.offset,
        record.original,
    )


def expected(corpus: Corpus, question: Question) -> list[tuple[object, ...]]:
    triggers = {
        (row.file_key or "", row.offset)
        for row in corpus.contents.events
        if row.category in question.categories
    }
    return [
        described(s.segment, s.block_id, s.position, s.source, s.record)
        for s in corpus.stored
        if answers(s, question, triggers)
    ]


def found(corpus: Corpus, question: Question) -> list[tuple[object, ...]]:
    return [
        described(h.segment, h.block_id, h.position, h.source, h.record)
        for h in search(corpus.directory, question)
    ]


# --- the journal is what the tests think it is --------------------------------------------------


def test_the_generated_journal_holds_every_parsed_record_once_over_three_segments(
    corpus: Corpus,
) -> None:
    parsed = [(log.key, r.offset, r.original) for log in corpus.contents.files for r in log.records]
    stored = [(s.source.file_key, s.record.offset, s.record.original) for s in corpus.stored]
    assert sorted(stored) == sorted(parsed)
    assert len({s.segment for s in corpus.stored}) == 3
    assert max(Counter(s.segment for s in corpus.stored if s.position == 0).values()) > 16
    assert any(len(s.record.error_codes) == 2 for s in corpus.stored)
    assert any("\n" in s.record.original for s in corpus.stored)
    assert any(s.record.timestamp_us is None for s in corpus.stored)
    assert {"timeout", "memory"} <= set(corpus.values("categories"))


# --- both plans against the brute-force answer ---------------------------------------------------


def of(*values: str) -> frozenset[str]:
    return frozenset(values)


def pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


WINDOW_START = epoch_us("2025-09-14T09:30:04")
WINDOW_END = epoch_us("2025-09-14T09:30:09")

INDEXED = {
    "an error code": Question(codes=of("E30009")),
    "either of two codes": Question(codes=of("EI0002", "W40011")),
    "a code and the INFO level": Question(codes=of("E19999"), levels=of("INFO")),
    "WARNING and ERROR": Question(levels=of("WARNING", "ERROR")),
    "the EVENT level": Question(levels=of("EVENT")),
    "ERROR and a pattern": Question(levels=of("ERROR"), pattern=pattern("timeout")),
    "ERROR on a device named in a plog body": Question(levels=of("ERROR"), device=1),
    "ERROR on a device named by the folder": Question(levels=of("ERROR"), device=3),
    "ERROR on a host and pid": Question(levels=of("ERROR"), host="node-b", pid=3400),
    "WARNING of a module": Question(levels=of("WARNING"), modules=of("HCCL", "GE")),
    "a code in a time window": Question(
        codes=of("E30009", "EL0004"), since_us=WINDOW_START, until_us=WINDOW_END
    ),
    "ERROR of a category": Question(levels=of("ERROR"), categories=of("timeout")),
    "a code of two categories": Question(codes=of("E30009"), categories=of("memory", "timeout")),
}
SCANNED = {
    "a pattern alone": Question(pattern=pattern("heartbeat lost")),
    "a pattern in a continuation line": Question(pattern=pattern("detail 1 of record")),
    "the INFO level": Question(levels=of("INFO")),
    "INFO and ERROR": Question(levels=of("INFO", "ERROR")),
    "DEBUG on a host": Question(levels=of("DEBUG"), host="node-a"),
    "a module": Question(modules=of("RUNTIME")),
    "a module of a Python logger": Question(modules=of("lmdeploy")),
    "a pid": Question(pid=4099),
    "a host": Question(host="node-b"),
    "a device named by the folder": Question(device=0),
    "a device named only in plog bodies": Question(device=1),
    "a device named both ways": Question(device=3),
    "a time window": Question(since_us=WINDOW_START, until_us=WINDOW_END),
    "since alone": Question(since_us=WINDOW_END),
    "until alone": Question(until_us=WINDOW_START),
    "a category": Question(categories=of("timeout")),
    "a category on a device": Question(categories=of("memory"), device=3),
    "a module, a pattern and a start": Question(
        modules=of("HCCL"), pattern=pattern("(?i)NOTIFY"), since_us=WINDOW_START
    ),
    # Blocks are searched as a whole before their records: patterns that look at the start or
    # end of a record, or past it, must still find exactly what a record-by-record search finds.
    "a pattern at the record start": Question(pattern=pattern(r"^\[ERROR\]")),
    "a pattern at the record end": Question(pattern=pattern(r"heartbeat lost$")),
    "a pattern at the end of a continuation line": Question(pattern=pattern(r"lost(?!.)")),
    "a pattern only at the text's start": Question(pattern=pattern(r"\A    detail|\A\[INFO")),
    "a pattern only at the text's end": Question(pattern=pattern(r"heartbeat lost\Z")),
    "a pattern not after a character": Question(pattern=pattern(r"(?<![\n ])\[WARNING\]")),
}


@pytest.mark.parametrize("question", INDEXED.values(), ids=INDEXED.keys())
def test_questions_answered_from_the_index_find_what_a_full_filter_finds(
    corpus: Corpus, question: Question
) -> None:
    assert question.indexed
    answer = expected(corpus, question)
    assert answer, "the question should have answers in the generated journal"
    assert found(corpus, question) == answer


@pytest.mark.parametrize("question", SCANNED.values(), ids=SCANNED.keys())
def test_questions_answered_by_reading_blocks_find_what_a_full_filter_finds(
    corpus: Corpus, question: Question
) -> None:
    assert not question.indexed
    answer = expected(corpus, question)
    assert answer, "the question should have answers in the generated journal"
    assert found(corpus, question) == answer


FILTERS = ("pattern", "since", "until", "levels", "modules", "codes", "categories", "device", "host", "pid")  # fmt: skip


@st.composite
def questions(draw: st.DrawFn, corpus: Corpus) -> Question:
    """A question with up to three filters, each a value that occurs in the journal."""
    names = draw(st.sets(st.sampled_from(FILTERS), max_size=3))
    times = corpus.values("times")

    def some(name: str, most: int) -> frozenset[Any]:
        if name not in names:
            return frozenset()
        return draw(st.frozensets(st.sampled_from(corpus.values(name)), min_size=1, max_size=most))

    def one(name: str, values: list[Any]) -> Any:
        return draw(st.sampled_from(values)) if name in names else None

    return Question(
        pattern=one("pattern", [re.compile(text) for text in PATTERNS]),
        since_us=one("since", times),
        until_us=one("until", times),
        levels=some("levels", 3),
        modules=some("modules", 2),
        codes=some("codes", 2),
        categories=some("categories", 2),
        device=one("device", corpus.values("device")),
        host=one("host", corpus.values("host")),
        pid=one("pid", corpus.values("pid")),
    )


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_question_finds_exactly_what_a_full_filter_finds(
    corpus: Corpus, data: st.DataObject
) -> None:
    question = data.draw(questions(corpus))
    assert found(corpus, question) == expected(corpus, question)


# --- single behaviours, named ---------------------------------------------------------------


def test_a_record_with_two_codes_is_found_by_its_second_code(corpus: Corpus) -> None:
    item = next(s for s in corpus.stored if len(s.record.error_codes) == 2)
    second = item.record.error_codes[1]
    originals = [
        hit.record.original for hit in search(corpus.directory, Question(codes=of(second)))
    ]
    assert item.record.original in originals


@pytest.mark.parametrize("levels", [of(), of("ERROR", "WARNING", "INFO", "DEBUG", "EVENT")])
def test_since_and_until_include_records_at_exactly_those_times(
    corpus: Corpus, levels: frozenset[str]
) -> None:
    item = next(s for s in corpus.stored if s.record.level == "ERROR" and s.position > 0)
    moment = item.record.timestamp_us
    question = Question(since_us=moment, until_us=moment, levels=levels)
    hits = list(search(corpus.directory, question))
    assert item.record.original in [hit.record.original for hit in hits]
    assert {hit.record.timestamp_us for hit in hits} == {moment}


def test_a_time_window_gives_the_same_warnings_from_the_index_and_from_blocks(
    corpus: Corpus,
) -> None:
    moment = next(s.record.timestamp_us for s in corpus.stored if s.record.level == "WARNING")
    bounds = {"since_us": moment - 2_000_000, "until_us": moment + 2_000_000}
    indexed = Question(levels=of("WARNING"), **bounds)
    scanned = Question(levels=of("WARNING", "DEBUG"), **bounds)
    assert indexed.indexed and not scanned.indexed
    from_blocks = [
        h.record.original for h in search(corpus.directory, scanned) if h.record.level == "WARNING"
    ]
    assert [h.record.original for h in search(corpus.directory, indexed)] == from_blocks != []


def test_a_record_without_a_time_never_answers_a_time_bound(corpus: Corpus) -> None:
    timeless = next(s for s in corpus.stored if s.record.timestamp_us is None)
    everything = Question(since_us=0, until_us=2**62)
    originals = [hit.record.original for hit in search(corpus.directory, everything)]
    assert timeless.record.original not in originals
    assert len(originals) == len(corpus.stored) - 2  # one such record per training log


def test_plog_records_whose_body_names_the_device_are_found_by_device(corpus: Corpus) -> None:
    for question in (Question(device=1), Question(device=1, levels=of("ERROR"))):
        hits = list(search(corpus.directory, question))
        assert hits
        assert all("/plog/" in hit.source.path for hit in hits)
        assert all("(device_id:1 die_id:0)" in hit.record.original for hit in hits)
        assert {hit.device for hit in hits} == {1}


def test_a_category_finds_only_the_records_that_triggered_its_events(corpus: Corpus) -> None:
    rows = [row for row in corpus.contents.events if row.category == "memory"]
    triggers = {(row.file_key, row.offset) for row in rows}
    hits = list(search(corpus.directory, Question(categories=of("memory"))))
    assert {(hit.source.file_key, hit.record.offset) for hit in hits} == triggers


def test_an_event_that_names_no_record_is_passed_over_by_a_category(tmp_path: Path) -> None:
    body = "[hccl.cc:9] [3303]notify wait timeout, error code E30009"
    plog = LogFile(PLOG, "node-a", [cann_line("ERROR", "HCCL", 3300, T0, body)])
    rows = rule_events([plog])
    orphan = replace(rows[0], id="without-offset", offset=None)
    write_journal(tmp_path, [plog], events=[*rows, orphan])
    hits = list(search(tmp_path, Question(categories=of(rows[0].category or ""))))
    assert [hit.record.original for hit in hits] == [plog.records[0].original]


def test_a_category_no_event_has_finds_nothing(corpus: Corpus) -> None:
    assert list(search(corpus.directory, Question(categories=of("no-such-category")))) == []


def test_hits_come_in_journal_order(corpus: Corpus) -> None:
    places = [(h.segment, h.block_id, h.position) for h in search(corpus.directory, Question())]
    assert places == sorted(places)
    assert len(places) == len(corpus.stored)


def test_codes_or_notable_levels_are_answered_from_the_index_and_the_rest_from_blocks() -> None:
    assert Question(codes=of("E30009")).indexed
    assert Question(codes=of("E30009"), levels=of("INFO")).indexed
    assert Question(levels=of("ERROR", "WARNING")).indexed
    assert not Question(levels=of("ERROR", "INFO")).indexed
    assert not Question(pattern=pattern("x"), modules=of("HCCL"), device=3).indexed


# --- events ---------------------------------------------------------------------------------


def documents(directory: Path, question: Question) -> list[str]:
    """The events `search_events` answers with, as canonical JSON texts."""
    return [
        json.dumps(json.loads(document), sort_keys=True)
        for document in search_events(directory, question)
    ]


def made(rows: list[EventRow], contents: JournalContents) -> list[str]:
    """The documents the rules made for `rows`, as canonical JSON texts."""
    return [json.dumps(json.loads(contents.made[row.id]), sort_keys=True) for row in rows]


def within(moment: int | None, since: int | None, until: int | None) -> bool:
    """Whether a time is inside inclusive bounds; no time is inside none."""
    if moment is None:
        return False
    return (since is None or moment >= since) and (until is None or moment <= until)


def matching_rows(contents: JournalContents, question: Question) -> list[EventRow]:
    rows, documents = contents.events, contents.made
    return [
        row
        for row in rows
        if (not question.categories or row.category in question.categories)
        and (not question.codes or row.code in question.codes)
        and (not question.levels or row.level in question.levels)
        and (not question.modules or row.logger in question.modules)
        and (question.since_us is None or within(row.timestamp_us, question.since_us, None))
        and (question.until_us is None or within(row.timestamp_us, None, question.until_us))
        and (question.device is None or row.device == question.device)
        and (question.host is None or row.host == question.host)
        and (question.pid is None or row.pid == question.pid)
        and (question.pattern is None or question.pattern.search(documents[row.id]) is not None)
    ]


EVENT_QUESTIONS = {
    "every event": Question(),
    "a category": Question(categories=of("timeout")),
    "two categories": Question(categories=of("memory", "config")),
    "a primary code": Question(codes=of("E30009")),
    "a trigger level": Question(levels=of("ERROR")),
    "a module": Question(modules=of("HCCL")),
    "a time window": Question(since_us=WINDOW_START, until_us=WINDOW_END),
    "a device": Question(device=3),
    "a host": Question(host="node-a"),
    "a pid": Question(pid=3300),
    "a pattern in the document": Question(pattern=pattern('"id":"hccl\\.')),
}


@pytest.mark.parametrize("question", EVENT_QUESTIONS.values(), ids=EVENT_QUESTIONS.keys())
def test_search_events_finds_the_journaled_events_that_match(
    corpus: Corpus, question: Question
) -> None:
    wanted = matching_rows(corpus.contents, question)
    assert wanted, "the question should have answers in the generated journal"
    assert sorted(documents(corpus.directory, question)) == sorted(made(wanted, corpus.contents))


def test_an_event_journaled_in_two_segments_is_found_once(tmp_path: Path) -> None:
    timeouts = [
        cann_line(
            "ERROR", "HCCL", 3300, T0 + n, f"[hccl.cc:9] [3303]notify wait timeout {n}, E30009"
        )
        for n in range(3)
    ]
    plog = LogFile(PLOG, "node-a", timeouts)
    contents = write_journal(tmp_path, [plog])
    rows = contents.events
    assert len(rows) >= 2
    # A replay after a crash journaled the last events again, in the next segment (earlier
    # agents did; the journal now keeps the segment before from being repeated).
    sequence = newest_sequence(tmp_path) + 1
    repeat = Segment(segment_path(tmp_path, sequence), sequence)
    repeat.append([], rows[-2:], [], [], written_us=0, snapshot=True)
    repeat.close()
    rows_on_disk = 0
    for _, path in list_segments(tmp_path):
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            rows_on_disk += db.execute("SELECT count(*) FROM events").fetchone()[0]
    assert rows_on_disk == len(rows) + 2
    assert sorted(documents(tmp_path, Question())) == sorted(made(rows, contents))
