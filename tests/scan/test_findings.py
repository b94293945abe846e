"""Findings: events grouped by rule, and where each happened — hosts, processes and ranks."""

from __future__ import annotations

from collections import Counter

from npuwatch.parsers.stream import StreamParser
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.events import Event
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.findings import group
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree
from npuwatch.terminal import Palette
from tests.conftest import TREES, utc_clock

RULES = load_rules([DEFAULT_PACKS])
WATCHDOG = "hccl.watchdog-timeout"
WATCHDOG_LINE = (
    "[rank{0}]:[E914 09:37:31.00{0}512402 compiler_depend.ts:429] [Rank {0}] Watchdog caught "
    "collective operation timeout: WorkHCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=120000) "
    "ran for 120031 milliseconds before timing out."
)


def hccl_timeout_events() -> list[Event]:
    return scan_tree(TREES / "hccl-timeout", utc_clock(), engine=RuleEngine(RULES)).events


def test_the_watchdog_timeout_of_seven_ranks_is_one_event_per_rank() -> None:
    watchdog = [event for event in hccl_timeout_events() if event.rule.id == WATCHDOG]
    counts = Counter({event.rank: 0 for event in watchdog})
    for event in watchdog:
        counts[event.rank] += event.count
    assert counts == {0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 7: 1}  # rank 6 failed first
    assert {event.pid for event in watchdog} == {None}  # c10 lines name no process


def test_a_finding_lists_each_rank_it_happened_on() -> None:
    (finding,) = [f for f in group(hccl_timeout_events()) if f.rule_id == WATCHDOG]
    assert finding.count == 7
    occurrences = finding.to_dict()["occurrences"]
    assert [(o["rank"], o["count"]) for o in occurrences] == [
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 1),
        (5, 1),
        (7, 1),
    ]


def test_the_report_says_which_ranks_a_finding_happened_on() -> None:
    result = scan_tree(TREES / "hccl-timeout", utc_clock(), engine=RuleEngine(RULES))
    text = render_scan(result, utc_clock().zone, Palette(False))
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if "Collective watchdog timeout" in line)
    assert "— 7× from" in lines[title]
    # The fixture is a collection of two hosts: the ranks are named per host.
    assert lines[title + 1] == "      where: host-a ranks 0–3; host-b ranks 4, 5, 7"
    notify = next(i for i, line in enumerate(lines) if "HCCL notify wait timed out" in line)
    # Seven processes, each named by its plog lines (pid) and its console lines (pid and rank).
    assert lines[notify + 1] == "      where: host-a ranks 0–3; host-b ranks 4, 5, 7"


def test_ranks_on_two_hosts_are_named_per_host() -> None:
    engine = RuleEngine(RULES)
    for host, ranks in (("host-a", (0, 1, 2, 3)), ("host-b", (4, 5, 7))):
        for rank in ranks:
            parser = StreamParser(utc_clock(), path=f"/job/{host}/train-rank{rank}.log", host=host)
            data = (WATCHDOG_LINE.format(rank) + "\n").encode()
            stream = engine.stream(parser.source)
            engine.process(parser.feed(data) + parser.flush(), stream)
            stream.close()
    result = ScanResult(root="job", events=engine.flush(), rules_applied=True)
    (finding,) = group(result.events)
    assert sorted((e.source.host, e.rank) for e in finding.events if e.source) == [
        ("host-a", 0),
        ("host-a", 1),
        ("host-a", 2),
        ("host-a", 3),
        ("host-b", 4),
        ("host-b", 5),
        ("host-b", 7),
    ]
    text = render_scan(result, utc_clock().zone, Palette(False))
    assert "      where: host-a ranks 0–3; host-b ranks 4, 5, 7" in text.splitlines()
