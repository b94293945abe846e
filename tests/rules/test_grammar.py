"""The condition language: what parses, into what, and how errors point at the problem."""

from __future__ import annotations

import pytest

from npuwatch.rules.condition import MAX_NESTING, And, Comparison, Not, Or
from npuwatch.rules.grammar import ConditionSyntaxError, parse_condition


def test_comparisons_and_their_values() -> None:
    assert parse_condition("error.code == EI0002") == Comparison(
        "error.code", "==", ("EI0002",), "", 0
    )
    assert parse_condition("ascend.runtime_codes in [207001, 507899]").values == (207001, 507899)
    assert parse_condition("error.code in E30000..E39999").op == "range"
    assert parse_condition("message ~ /time(d)? ?out/i").flags == "i"
    assert parse_condition('message contains "a \\"quoted\\" word"').values == ('a "quoted" word',)
    assert parse_condition("message startswith 'x'").op == "startswith"
    assert parse_condition("error.code exists").op == "exists"
    assert parse_condition("fields.cost_ms > 60000").values == (60000,)
    assert parse_condition("process.pid <= -1").values == (-1,)


def test_not_binds_tighter_than_and_which_binds_tighter_than_or() -> None:
    node = parse_condition("a == 1 or b == 2 and not c exists")
    assert isinstance(node, Or)
    assert isinstance(node.operands[1], And)
    assert isinstance(node.operands[1].operands[1], Not)


def test_parentheses_group() -> None:
    node = parse_condition("(a == 1 or b == 2) and c == 3")
    assert isinstance(node, And) and isinstance(node.operands[0], Or)


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("error.code ==", 14, "expected value"),
        ("error.code = E1", 12, "expected an operator"),
        ("a == 1 and", 11, "after 'and'"),
        ("a == 1 b == 2", 8, "expected 'and', 'or' or the end of the condition, found 'b'"),
        ("a ~ /unclosed", 5, "expected /regex/"),
        ("(a == 1", 1, "'(' is not closed"),
        ("== 3", 1, "expected a comparison"),
    ],
)
def test_syntax_errors_say_where_and_what_was_expected(
    text: str, column: int, message: str
) -> None:
    with pytest.raises(ConditionSyntaxError) as error:
        parse_condition(text)
    assert message in str(error.value)
    assert error.value.column == column
    assert error.value.line == 1


def test_errors_on_a_later_line_of_a_multi_line_condition() -> None:
    with pytest.raises(ConditionSyntaxError) as error:
        parse_condition("log.level == ERROR\nand message ~ /x")
    assert (error.value.line, error.value.column) == (2, 15)
    assert "expected /regex/, found '/x'" in str(error.value)


@pytest.mark.parametrize(
    ("condition", "column"),
    [
        ("(" * 10_000 + "log.level == ERROR" + ")" * 10_000, MAX_NESTING + 1),
        ("not " * 10_000 + "log.level == ERROR", 4 * MAX_NESTING + 1),
        ("not (" * 5_000 + "a == 1" + ")" * 5_000, 5 * (MAX_NESTING // 2) + 1),
    ],
)
def test_a_condition_nested_deeper_than_the_limit_is_refused_where_it_gets_too_deep(
    condition: str, column: int
) -> None:
    with pytest.raises(ConditionSyntaxError) as refused:
        parse_condition(condition)
    assert str(refused.value).startswith(f"nested deeper than {MAX_NESTING}")
    assert (refused.value.line, refused.value.column) == (1, column)


def test_nesting_up_to_the_limit_parses_and_strings_and_regexes_do_not_count() -> None:
    deepest = "(" * MAX_NESTING + "a == 1" + ")" * MAX_NESTING
    assert parse_condition(deepest) == Comparison("a", "==", (1,), "", MAX_NESTING)
    assert isinstance(parse_condition("not " * MAX_NESTING + "a == 1"), Not)
    brackets = "(" * 40 + "((("
    node = parse_condition(f'm contains "{brackets}" and m ~ /{brackets}x{")" * 43}/')
    assert isinstance(node, And)
    many = " and ".join(f"not (a == {n} or not b == {n})" for n in range(2000))
    assert len(parse_condition(many).operands) == 2000  # type: ignore[union-attr]
