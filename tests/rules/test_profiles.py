"""Profiles: what the records of one signature are tested against, decided on one of them."""

from __future__ import annotations

from npuwatch.records import Record
from npuwatch.rules.condition import And, Comparison, Not, Or
from npuwatch.rules.grammar import parse_condition
from npuwatch.rules.profiles import decide
from tests.rules.test_engine import line, records_of


def record(text: str, level: str = "ERROR", module: str = "HCCL") -> Record:
    (found,), _ = records_of([line(level, module, 1, text)])
    return found


def test_comparisons_on_codes_are_decided_and_the_text_test_is_left() -> None:
    node = parse_condition(
        "error.code == EI0006 or (log.level == ERROR and message ~ /socket.*out/i)"
    )
    left = decide(node, record("socket timed out"))
    assert isinstance(left, Comparison) and left.field == "message"
    assert decide(node, record("socket timed out EI0006")) is True
    assert decide(node, record("socket timed out", level="WARNING")) is False


def test_a_condition_on_signature_fields_only_is_decided_whole() -> None:
    node = parse_condition("not error.code exists and log.logger in [HCCL, HCCP]")
    assert decide(node, record("fine")) is True
    assert decide(node, record("fine E19999")) is False
    assert decide(node, record("fine", module="GE")) is False


def test_what_no_signature_field_decides_is_left_as_it_is() -> None:
    node = parse_condition("process.pid == 3300 and not message contains benign")
    assert decide(node, record("x")) is node
    mixed = parse_condition("ascend.tags == Timeout or (log.level == ERROR and message contains a)")
    left = decide(mixed, record("x"))
    assert isinstance(left, Or) and len(left.operands) == 2
    assert isinstance(decide(Not(mixed, 0), record("x")), Not)
    assert isinstance(decide(And((mixed, mixed), 0), record("x")), And)
