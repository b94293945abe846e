"""The engine: which rules fire, thresholds, dedupe, context, hot reload."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from npuwatch.parsers.stream import StreamParser
from npuwatch.record_schema import LogRecord
from npuwatch.records import Record
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import DEFAULT_PACKS, RuleSet, load_rules
from tests.conftest import utc_clock

PLOG = "/root/ascend/log/debug/plog/plog-3300_20250914093300120.log"


def line(level: str, module: str, second: int, text: str, pid: int = 3300) -> str:
    return f"[{level}] {module}({pid},python3):2025-09-14-09:37:{second:02d}.000.000 [a.cc:1] [{pid}]{text}"


def records_of(lines: list[str], path: str = PLOG) -> tuple[list[Record], StreamParser]:
    parser = StreamParser(utc_clock(), path=path)
    data = ("\n".join(lines) + "\n").encode()
    return parser.feed(data) + parser.flush(), parser


def pack(tmp_path: Path, rules: str, name: str = "test") -> RuleSet:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"pack: {name}\nrules:\n" + textwrap.indent(textwrap.dedent(rules), "  "))
    return load_rules([path])


def run(engine: RuleEngine, lines: list[str], path: str = PLOG, batch: int = 0):  # type: ignore[no-untyped-def]
    records, parser = records_of(lines, path)
    stream = engine.stream(parser.source)
    step = batch or len(records) or 1
    for start in range(0, len(records), step):
        engine.process(records[start : start + step], stream)
    stream.close()
    return engine.flush()


RULE = """\
- id: t.{name}
  title: {name}
  when: {when}
  severity: {severity}
  layer: runtime
  category: {category}
  advice: check
  examples: {{match: ["x"]}}
"""


def rule(
    name: str, when: str, severity: str = "error", category: str = "error", **extra: str
) -> str:
    text = RULE.format(name=name, when=when, severity=severity, category=category)
    for key, value in extra.items():
        text += f"  {key}: {value}\n"
    return text


def test_the_most_specific_tier_wins_and_only_it_fires() -> None:
    engine = RuleEngine(load_rules([DEFAULT_PACKS]))
    events = run(engine, [line("ERROR", "HCCL", 1, "notify wait timeout, remote rank[6], EI0002")])
    assert [event.rule.id for event in events] == ["hccl.notify-wait-timeout"]
    assert events[0].fields == {"remote_rank": "6"}


def test_a_threshold_fires_at_the_count_within_the_window_per_group(tmp_path: Path) -> None:
    rules = pack(
        tmp_path,
        rule(
            "retry",
            "log.level == WARNING and message contains retry",
            threshold="{count: 3, within: 60s, by: [process.pid]}",
        ),
    )
    engine = RuleEngine(rules)
    spread = [line("WARNING", "HCCP", s, "retry") for s in (0, 40)] + [
        line("WARNING", "HCCP", 50, "retry", pid=1)  # another process: another group
    ]
    assert run(engine, spread) == []
    burst = [line("WARNING", "HCCP", s, "retry") for s in (0, 10, 20)]
    (event,) = run(RuleEngine(rules), burst)
    assert event.trigger.message == "retry" and event.first_us == event.trigger.timestamp_us


def test_matches_within_the_dedupe_window_are_counted_on_one_event(tmp_path: Path) -> None:
    rules = pack(
        tmp_path, rule("err", "log.level == ERROR", dedupe="{within: 30s, by: [process.pid]}")
    )
    lines = [line("ERROR", "GE", s, "x") for s in (0, 5, 29)]
    lines += [line("ERROR", "GE", 40, "later"), line("ERROR", "GE", 41, "y", pid=7)]
    events = run(RuleEngine(rules), lines)
    assert [(e.count, e.pid) for e in events] == [(3, 3300), (1, 3300), (1, 7)]
    assert events[0].last_us - events[0].first_us == 29_000_000


def test_context_before_and_after_spans_batches(tmp_path: Path) -> None:
    rules = pack(tmp_path, rule("err", "log.level == ERROR", context="{before: 3, after: 2}"))
    lines = [line("INFO", "GE", s, f"info {s}") for s in range(5)]
    lines += [line("ERROR", "GE", 5, "boom")] + [
        line("INFO", "GE", 6 + s, f"after {s}") for s in range(3)
    ]
    (event,) = run(RuleEngine(rules), lines, batch=4)
    assert [text.rsplit("]", 1)[1] for text in event.before] == ["info 2", "info 3", "info 4"]
    assert [text.rsplit("]", 1)[1] for text in event.after] == ["after 0", "after 1"]


def test_events_wait_for_their_window_in_log_time_then_drain(tmp_path: Path) -> None:
    rules = pack(
        tmp_path,
        rule("err", "log.level == ERROR", context="{before: 0, after: 0}", dedupe="{within: 60s}"),
    )
    engine = RuleEngine(rules)
    records, parser = records_of([line("ERROR", "GE", 0, "x"), line("INFO", "GE", 30, "y")])
    stream = engine.stream(parser.source)
    engine.process(records, stream)
    assert engine.drain() == []
    later, _ = records_of([line("INFO", "GE", 0, "z").replace("09:37:00", "09:39:00")])
    engine.process(later, stream)
    assert [event.trigger.message for event in engine.drain()] == ["x"]


def test_an_event_of_a_recent_file_closes_by_that_file_s_own_log_time(tmp_path: Path) -> None:
    """Another file's later time (or the wall clock) closes no window of a file that wrote
    lately: its next match, held by the reader until the file went quiet, joins the event."""
    rules = pack(
        tmp_path,
        rule("err", "log.level == ERROR", context="{before: 0, after: 0}", dedupe="{within: 60s}"),
    )
    engine = RuleEngine(rules)
    first, parser = records_of([line("ERROR", "GE", 0, "x")])
    stream = engine.stream(parser.source)
    engine.process(first, stream)
    later, other = records_of(
        [line("INFO", "GE", 0, "an hour on").replace("09:37:00", "10:37:00")], path=PLOG + ".2"
    )
    engine.process(later, engine.stream(other.source))
    wall = 4_000_000_000_000_000
    assert engine.drain(recent={parser.source: stream.now_us}) == []
    assert engine.drain(wall, recent={parser.source: stream.now_us}) == []
    held, _ = records_of([line("ERROR", "GE", 1, "x again")])
    engine.process(held, stream)
    (event,) = engine.drain(wall)  # the file went quiet: the wall clock closes its window
    assert (event.trigger.message, event.count) == ("x", 2)


def test_counting_rules_tally_a_flood_per_batch(tmp_path: Path) -> None:
    rules = pack(
        tmp_path,
        rule(
            "flood",
            "log.level == DEBUG",
            severity="warning",
            threshold="{count: 100, within: 10m, by: [host.name]}",
            dedupe="{within: 1h, by: [host.name]}",
        ),
    )
    engine = RuleEngine(rules)
    lines = [line("DEBUG", "RUNTIME", s % 60, "d") for s in range(250)]
    (event,) = run(engine, lines, batch=40)
    assert engine.match_counts["t.flood"] == 250
    assert event.count == 2  # reached at 120 and again at 240 records, within one dedupe window


def test_literal_rules_find_their_records_with_or_without_the_raw_batch(tmp_path: Path) -> None:
    rules = pack(
        tmp_path, rule("lit", "log.logger == GE and event.original contains 'ompile graph'")
    )
    assert ("literal", ("ompile graph", False)) in rules.rules[0].keys  # type: ignore[operator]
    lines = [line("INFO", "GE", 0, "nothing"), line("INFO", "GE", 1, "Compile graph 3 done")]
    records, parser = records_of(lines)
    for raw in (None, ("\n".join(lines) + "\n").encode()):
        engine = RuleEngine(rules)
        engine.process(records, engine.stream(parser.source), raw)
        assert [e.trigger.message for e in engine.flush()] == ["Compile graph 3 done"]


def test_rules_reach_records_of_other_formats(tmp_path: Path) -> None:
    rules = pack(tmp_path, rule("wd", "ascend.format == c10 and message ~ /watchdog/i"))
    events = run(RuleEngine(rules), ["[rank3]:[E914 09:37:31.1 c.ts:1] Watchdog caught a timeout"])
    assert [event.rank for event in events] == [3]


def test_a_rule_for_another_module_is_not_in_the_plan(tmp_path: Path) -> None:
    rules = pack(tmp_path, rule("hccl", "log.level == ERROR and log.logger == HCCL"))
    engine = RuleEngine(rules)
    index = engine._index
    assert index.plan(("ERROR", "RUNTIME", "slog", "plog")).entries == ()
    ((found, test),) = index.plan(("ERROR", "HCCL", "slog", "plog")).entries
    assert found.id == "t.hccl" and test is None  # the plan key proves the whole condition


def test_events_are_records_with_rule_fields_that_satisfy_the_schema() -> None:
    engine = RuleEngine(load_rules([DEFAULT_PACKS]))
    (event,) = run(engine, [line("ERROR", "RUNTIME", 1, "there is an aicore error exception")])
    document = event.to_document()
    LogRecord.model_validate(document)
    assert document["event"]["kind"] == "alert"
    assert document["rule"]["id"] == "device.aicore-exception"
    assert document["ascend"]["finding"]["advice"].startswith("An operator crashed")


def test_reload_swaps_rules_and_a_broken_pack_keeps_the_old_ones(tmp_path: Path) -> None:
    first = pack(tmp_path, rule("a", "log.level == ERROR"), name="first")
    engine = RuleEngine(first)
    broken = tmp_path / "broken.yaml"
    broken.write_text("pack: broken\nrules:\n  - id: x\n    when: log.level ==\n")
    problems = engine.reload(lambda: load_rules([broken]))
    assert problems and [rule.id for rule in engine.rules] == ["t.a"]
    second = pack(tmp_path, rule("b", "log.level == WARNING"), name="second")
    assert engine.reload(lambda: second) == []
    assert [rule.id for rule in engine.rules] == ["t.b"]
    assert [e.rule.id for e in run(engine, [line("WARNING", "GE", 1, "w")])] == ["t.b"]


def test_threshold_state_survives_a_reload_for_rules_that_remain(tmp_path: Path) -> None:
    text = rule("retry", "log.level == WARNING", threshold="{count: 2, within: 60s}")
    engine = RuleEngine(pack(tmp_path, text))
    records, parser = records_of([line("WARNING", "GE", 1, "w")])
    stream = engine.stream(parser.source)
    engine.process(records, stream)
    engine.replace(pack(tmp_path, text, name="again"))
    more, _ = records_of([line("WARNING", "GE", 2, "w")])
    engine.process(more, stream)
    assert len(engine.flush()) == 1


@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_batch_size_does_not_change_the_events(batch: int) -> None:
    lines = [line("INFO", "GE", s, "i") for s in range(6)] + [
        line("ERROR", "RUNTIME", 7, "there is an aicore error exception"),
        line("ERROR", "HCCL", 8, "notify wait timeout EI0002"),
    ]
    events = run(RuleEngine(load_rules([DEFAULT_PACKS])), lines, batch=batch)
    assert [(e.rule.id, len(e.before), len(e.after)) for e in events] == [
        ("device.aicore-exception", 6, 1),
        ("hccl.notify-wait-timeout", 7, 0),
    ]


def test_the_parsers_batch_index_gives_the_same_events_as_reading_the_records() -> None:
    lines = [line("DEBUG", "GE", s % 60, "d") for s in range(30)]
    lines += [line("ERROR", "HCCL", 40, "notify wait timeout EI0002"), "  continuation"]
    lines += ["[rank3]:[E914 09:37:45.1 c.ts:1] Watchdog caught a timeout"]
    data = ("\n".join(lines) + "\n").encode()
    outcomes = []
    for indexed in (False, True):
        parser = StreamParser(utc_clock(), path=PLOG, batch_index=indexed)
        engine = RuleEngine(load_rules([DEFAULT_PACKS]))
        stream = engine.stream(parser.source)
        records = parser.feed(data)
        if indexed:
            assert parser.last_batch.levels == [r.level for r in records]
            assert parser.last_batch.flagged == [i for i, r in enumerate(records) if r.flags]
        engine.process(records, stream, data, parser.last_batch if indexed else None)
        tail = parser.flush()
        engine.process(tail, stream, hints=parser.last_batch if indexed else None)
        outcomes.append(([e.to_document() for e in engine.flush()], dict(engine.match_counts)))
    assert outcomes[0] == outcomes[1]


def test_dedupe_keeps_ranks_apart_when_their_lines_carry_no_pid(tmp_path: Path) -> None:
    rules = pack(tmp_path, rule("wd", "ascend.format == c10 and message ~ /watchdog/i"))
    watchdog = "[rank{0}]:[E914 09:37:31.00{0} c.ts:1] [Rank {0}] Watchdog caught a timeout"
    lines = [watchdog.format(rank) for rank in (0, 1, 2, 3, 4, 5, 7)] + [watchdog.format(3)]
    events = run(RuleEngine(rules), lines, path="/root/job/train.log")
    assert sorted((e.rank, e.count) for e in events) == [
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 1),
        (5, 1),
        (7, 1),
    ]


def test_dedupe_keeps_hosts_apart_whatever_the_rule_groups_by(tmp_path: Path) -> None:
    rules = pack(
        tmp_path, rule("err", "log.level == ERROR", dedupe="{within: 60s, by: [process.pid]}")
    )
    engine = RuleEngine(rules)
    for host in ("host-a", "host-b", "host-a"):
        parser = StreamParser(utc_clock(), path=PLOG, host=host)
        records = parser.feed((line("ERROR", "GE", 1, "x") + "\n").encode()) + parser.flush()
        stream = engine.stream(parser.source)
        engine.process(records, stream)
        stream.close()
    events = engine.flush()
    assert sorted((e.source.host, e.count) for e in events if e.source) == [
        ("host-a", 2),
        ("host-b", 1),
    ]


def test_a_module_rule_finds_its_records_with_the_parsers_modules_or_without(
    tmp_path: Path,
) -> None:
    """The parser's BatchIndex lists each record's module: the engine passes over the modules
    of a batch that holds none of its rules' modules, and still finds the one that does."""
    rules = pack(tmp_path, rule("mon", "log.logger == MONITOR and message contains 'NaN'"))
    assert ("module", "MONITOR") in rules.rules[0].keys  # type: ignore[operator]
    without = [line("INFO", "GE", s, f"NaN {s}") for s in range(3)]
    within = [*without, line("INFO", "MONITOR", 5, "NaN at step 7")]
    for lines, expected in ((without, []), (within, ["NaN at step 7"])):
        parser = StreamParser(utc_clock(), path=PLOG, batch_index=True)
        data = ("\n".join(lines) + "\n").encode()
        batches = [(parser.feed(data), parser.last_batch), (parser.flush(), parser.last_batch)]
        assert [batch.loggers for _, batch in batches] == [
            [record.logger for record in records] for records, _ in batches
        ]
        for hinted in (True, False):
            engine = RuleEngine(rules)
            stream = engine.stream(parser.source)
            for records, hints in batches:
                engine.process(records, stream, data, hints if hinted else None)
            found = [event.trigger.message for event in engine.flush()]
            assert found == expected, (hinted, found)


# --- the batch's word search passes over records, never over matches ----------------------------

TRICKY = [
    ("negated", "log.level == ERROR and not message contains benign"),
    ("host", "host.name == node-b and message contains disk"),
    ("module", "log.logger == HCCL and log.level == ERROR"),
    ("either", "message contains alpha or log.level == WARNING"),
    ("tags", "log.level == ERROR and (ascend.tags == Timeout or message ~ /exec timeout/i)"),
    ("kelvin", "log.level == ERROR and message ~ /kernel panic/i"),
    ("header", "log.level == ERROR and event.original contains 'RUNTIME(3300'"),
    ("lines", "log.level == ERROR and message ~ /long\\n  alpha/"),
    ("gbk", "log.level == ERROR and message contains '失败'"),
    ("code", "error.code == EI0006 or (log.level == ERROR and message ~ /socket.*time ?out/i)"),
    ("starts", "log.level == ERROR and message startswith exec"),
    ("quiet", "log.level == WARNING and not message ~ /quiet/"),
    ("pid", "log.level == WARNING and process.pid == 7"),
    ("graph", "event.original contains 'ompile graph'"),
    ("original-i", "event.original ~ /kernel panic/i"),
]
"""Conditions a prefilter of the raw text gets wrong: fields that are not in it (host, level,
module, tags, pid), negations, words only in the header, across a CRLF line end (the text has
none), in another encoding, folded by case, and literals of the index."""

TRICKY_LINES = (
    line("ERROR", "HCCL", 1, "[Timeout] exec ran long").encode() + b"\r\n  alpha\r\n",
    line("ERROR", "RUNTIME", 2, "\u212aernel panic, benign").encode() + b"\n",
    line("ERROR", "GE", 3, "编译失败").encode("gbk") + b"\n",
    line("ERROR", "HCCL", 4, "socket 10.0.0.1 timed out").encode() + b"\n",
    line("ERROR", "HCCL", 5, "link down EI0006").encode() + b"\n",
    line("WARNING", "GE", 6, "quiet please").encode() + b"\n",
    line("WARNING", "GE", 7, "loud", pid=7).encode() + b"\n",
    line("INFO", "GE", 8, "Compile graph 3").encode() + b"\n  second line\n",
    line("INFO", "GE", 9, "disk alpha").encode() + b"\n",
    line("ERROR", "RUNTIME", 10, "benign").encode() + b"\n",
)


def every_match(rules: RuleSet, records: list[Record]) -> list[tuple[str, int | None]]:
    """What the engine must find: every rule's own test on every record, the most specific
    tier of each record's matches."""
    found = []
    for record in records:
        matched = [rule for rule in rules.rules if rule.predicate(record)]
        tier = min((rule.spec.fallback for rule in matched), default=0)
        found += [(rule.id, record.offset) for rule in matched if rule.spec.fallback == tier]
    return sorted(found)


def tricky_rules(tmp_path: Path, *extra: tuple[str, str]) -> RuleSet:
    text = "".join(
        rule(name, when, dedupe="{within: 0s}", context="{before: 0, after: 0}")
        for name, when in [*TRICKY, *extra]
    )
    text += rule("last", "log.level == ERROR", fallback="1", dedupe="{within: 0s}")
    return pack(tmp_path, text)


def matches_by_chunks(rules: RuleSet, chunks: list[bytes], hinted: bool) -> list[Any]:
    engine = RuleEngine(rules)
    parser = StreamParser(utc_clock(), path=PLOG, host="node-b", batch_index=hinted)
    stream = engine.stream(parser.source)
    offset = 0
    for chunk in chunks:
        records = parser.feed(chunk, offset)
        offset += len(chunk)
        engine.process(records, stream, chunk if hinted else None, parser.last_batch)
    engine.process(parser.flush(), stream, hints=parser.last_batch if hinted else None)
    return sorted((event.rule.id, event.trigger.offset) for event in engine.flush())


@pytest.mark.parametrize("always", [False, True])
def test_the_engine_finds_what_every_rule_tested_on_every_record_finds(
    tmp_path: Path, always: bool
) -> None:
    # A rule without an index key (`always`) puts every record in front of every rule.
    rules = tricky_rules(tmp_path, *([("always", "not process.pid == 1")] if always else []))
    data = b"".join(TRICKY_LINES)
    parser = StreamParser(utc_clock(), path=PLOG, host="node-b")
    expected = every_match(rules, parser.feed(data) + parser.flush())
    assert {rule_id for rule_id, _ in expected} >= {f"t.{name}" for name, _ in TRICKY}
    lines = data.splitlines(keepends=True)
    for chunks in ([data], lines, [b"".join(lines[:2]), b"".join(lines[2:])]):
        for hinted in (True, False):
            assert matches_by_chunks(rules, chunks, hinted) == expected, (len(chunks), hinted)


def test_a_literal_in_the_chunk_before_still_finds_its_record(tmp_path: Path) -> None:
    """The parser holds a record until the next one starts: the batch of a chunk starts with a
    record whose first line, and literal, are in the chunk before."""
    rules = pack(tmp_path, rule("graph", "event.original contains 'ompile graph'"))
    first = line("INFO", "GE", 1, "Compile graph 3").encode() + b"\n"
    chunks = [first, b"  its second line\n", line("INFO", "GE", 2, "next").encode() + b"\n"]
    for hinted in (True, False):
        assert matches_by_chunks(rules, chunks, hinted) == [("t.graph", 0)]


def test_a_case_insensitive_literal_is_found_in_text_that_is_not_ascii(tmp_path: Path) -> None:
    rules = pack(tmp_path, rule("panic", "event.original ~ /kernel panic/i"))
    chunks = [line("INFO", "GE", 1, "\u212aernel panic").encode() + b"\n"]
    chunks.append(line("INFO", "GE", 2, "next").encode() + b"\n")
    assert matches_by_chunks(rules, chunks, hinted=True) == [("t.panic", 0)]


def test_a_rule_that_dedupes_by_the_file_keeps_files_and_ranks_apart(tmp_path: Path) -> None:
    rules = pack(
        tmp_path,
        rule("err", "log.level == ERROR", dedupe="{within: 1h, by: [host.name, log.file.path]}"),
    )
    engine = RuleEngine(rules)
    other = PLOG.replace("3300_", "3301_")
    head = "[ERROR] HCCL({}, p):2025-09-14-09:37:01.000.000 [hcom.cc:264]"
    for path, pid, rank in ((PLOG, 1, None), (PLOG, 2, None), (other, 1, None), (PLOG, 1, 7)):
        text = head.format(pid) + ("x" if rank is None else f"[hccl-1-0-2-group][{rank}]x")
        parser = StreamParser(utc_clock(), path=path, host="node-a")
        records = parser.feed((text + "\n").encode()) + parser.flush()
        assert [record.rank for record in records] == [rank]
        stream = engine.stream(parser.source)
        engine.process(records, stream)
        stream.close()
    events = engine.flush()
    assert sorted((e.source.path == PLOG, e.count) for e in events if e.source) == [
        (False, 1),
        (True, 1),
        (True, 2),
    ]
