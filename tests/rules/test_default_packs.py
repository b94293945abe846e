"""The default packs: valid, every rule tested by its examples, and right on real and fixture
logs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npuwatch.parsers.stream import StreamParser
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.examples import run_examples
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.scan.findings import verdict
from npuwatch.scan.tree import scan_tree
from npuwatch.vocabulary import ERROR_LEVELS
from tests.conftest import TREES, utc_clock

RULES = load_rules([DEFAULT_PACKS])
TIMEOUT = re.compile(r"\btime[ds]? ?out\b|\btimeout\b", re.IGNORECASE)


def test_every_default_rule_has_examples_and_they_all_pass() -> None:
    assert all(rule.spec.examples.match for rule in RULES.rules)
    count, failures = run_examples(RULES.rules)
    assert count >= len(RULES.rules)
    assert [str(failure) for failure in failures] == []


def test_every_default_rule_is_indexed() -> None:
    assert [rule.id for rule in RULES.rules if rule.keys is None] == []


def test_the_catalogue_covers_every_code_family_and_the_common_runtime_codes() -> None:
    ids = {rule.id for rule in RULES.rules}
    for family in (
        "ge",
        "fe",
        "aicpu",
        "te-fusion",
        "operator-compile",
        "runtime",
        "acl",
        "hccl",
        "hccp",
        "driver",
        "operator",
    ):
        assert f"cann.family.{family}" in ids
    for code in (107020, 207001, 507013, 507014, 507015, 507018, 507033, 507035, 507046, 507048):
        assert any(rule.id.startswith(f"acl.{code}") for rule in RULES.rules)


@pytest.mark.realdata
def test_every_real_error_or_coded_record_yields_an_event(real_logs: list[Path]) -> None:
    unexplained = []
    timeouts_without_timeout_event = []
    for path in real_logs:
        parser = StreamParser(utc_clock(), path=str(path))
        records = parser.feed(path.read_bytes()) + parser.flush()
        for record in records:
            single = RuleEngine(RULES)
            single.process([record], single.stream(parser.source))
            events = single.flush()
            important = record.level in ERROR_LEVELS or bool(record.error_codes)
            if important and not events:
                unexplained.append(f"{path.name}: {record.original[:140]}")
            is_timeout = (important or record.level == "WARNING") and TIMEOUT.search(record.message)
            if is_timeout and not any(e.rule.spec.category == "timeout" for e in events):
                timeouts_without_timeout_event.append(f"{path.name}: {record.original[:140]}")
    assert unexplained == []
    assert timeouts_without_timeout_event == []


@pytest.mark.parametrize(
    ("tree", "category", "where"),
    [
        ("aicore-exception", "device", {"device": 1}),  # the firmware's AI Core exception
        ("out-of-memory", "memory", {"pid": 51220}),
        ("op-compile-failure", "compile", {"pid": 200452}),
    ],
)
def test_scan_names_the_right_first_failure_of_each_fixture(
    tree: str, category: str, where: dict[str, int]
) -> None:
    result = scan_tree(TREES / tree, utc_clock(), engine=RuleEngine(RULES))
    first = verdict(result.events)
    assert first is not None
    assert first.event.rule.spec.category == category
    assert not first.event.rule.spec.symptom
    described = first.to_dict()
    assert {key: described[key] for key in where} == where
    assert described["advice"]


def test_the_hccl_timeout_verdict_is_at_the_root_cause_of_its_incident() -> None:
    """Rank 6 (host-b, device 2) lost its RDMA link; the seven others timed out waiting for it.
    The incident says so (tests/correlation), and the rule verdict agrees with it."""
    result = scan_tree(TREES / "hccl-timeout", utc_clock(), engine=RuleEngine(RULES))
    (incident,) = result.incidents
    (root,) = incident.root_cause
    assert (root.host, root.device, root.rank) == ("host-b", 2, 6)
    assert len(incident.victims) == 7
    first = result.first_failure()
    assert first is not None
    described = first.to_dict()
    assert (described["host"], described["device"]) == ("host-b", 2)
    assert first.event.rule.spec.category == "communication"
    assert not first.event.rule.spec.symptom


def test_a_clean_run_has_no_failure() -> None:
    result = scan_tree(TREES / "clean-run", utc_clock(), engine=RuleEngine(RULES))
    assert verdict(result.events) is None
    assert all(event.severity in ("info", "warning") for event in result.events)


def test_the_hccl_timeout_ranks_are_symptoms_of_rank_6() -> None:
    result = scan_tree(TREES / "hccl-timeout", utc_clock(), engine=RuleEngine(RULES))
    notify = [e for e in result.events if e.rule.id == "hccl.notify-wait-timeout"]
    assert {e.pid for e in notify} == {3300, 3301, 3302, 3303, 3304, 3305, 3307}
    assert {e.fields.get("remote_rank") for e in notify} == {"6"}
    first = verdict(result.events)
    assert first is not None and first.symptoms_after >= len(notify)
