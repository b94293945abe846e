"""Conditions compiled to predicates, and the index keys they give the engine."""

from __future__ import annotations

import pytest

from npuwatch.rules.compiler import CompileError, compile_condition, required_literal
from npuwatch.rules.grammar import parse_condition
from tests.conftest import parse_one

ERROR_LINE = (
    "[ERROR] HCCL(3300,python3):2025-09-14-09:37:31.402.500 [task.cc:810] [3303][TaskExecStage]"
    "notify wait timeout, remote rank[6], errors EI0002 and EZ9999, runtime result = 507048"
)


def holds(condition: str, line: str = ERROR_LINE, path: str | None = None) -> bool:
    return compile_condition(parse_condition(condition)).predicate(parse_one(line, path))


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("log.level == ERROR", True),
        ("log.level != ERROR", False),
        ("log.logger in [HCCL, HCCP]", True),
        ("error.code == EZ9999", True),  # any code of the record
        ("error.code == E19999", False),
        ("error.code in EI0000..EI9999", True),
        ("error.code ~ /^EZ/", True),
        ("ascend.runtime_codes == 507048", True),
        ("process.pid > 3000 and process.pid < 4000", True),
        ("message contains 'remote rank[6]'", True),
        ("message startswith 'notify wait'", True),
        ("message ~ /NOTIFY WAIT/i", True),
        ("message ~ /NOTIFY WAIT/", False),
        ("ascend.tags == TaskExecStage", True),
        ("process.thread.id == 3303", True),
        ("ascend.framework_code exists", False),
        ("not error.code exists", False),
        ("log.level == ERROR and (log.logger == GE or message contains 'notify')", True),
    ],
)
def test_predicates(condition: str, expected: bool) -> None:
    assert holds(condition) is expected


def test_stream_fields_come_from_the_path() -> None:
    path = "/root/ascend/log/debug/device-3/device-3300_20250914093300120.log"
    assert holds(
        "ascend.kind == device and ascend.device == 3 and ascend.channel == debug", path=path
    )
    assert holds("log.file.path contains 'device-3'", path=path)


def test_a_message_regex_anchored_at_its_start_is_tested_on_the_message() -> None:
    assert holds("message ~ /^notify wait/")
    assert not holds("message ~ /^\\[3303\\]/")  # the raw text starts differently


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("log.levle == ERROR", "unknown field 'log.levle' (did you mean log.level"),
        ("process.pid == HCCL", "process.pid holds numbers"),
        ("error.code == 507035", "numeric ACL codes such as 507035 are in ascend.runtime_codes"),
        ("message ~ /(/", "bad regex"),
        ("fields.rank > 1", "needs an 'extract' pattern"),
        ("process.pid contains 3", "'contains' works on text"),
        ("log.level in ERROR..WARN", "expected"),
    ],
)
def test_compile_errors(condition: str, message: str) -> None:
    with pytest.raises((CompileError, ValueError)) as error:
        compile_condition(parse_condition(condition))
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("condition", "keys"),
    [
        ("error.code == EI0002", {("code", "EI0002")}),
        ("error.code in E30000..E39999", {("code_prefix", "E3")}),
        ("error.code ~ /^EI/", {("code_prefix", "EI")}),
        ("error.code exists", {("any_code", None)}),
        ("ascend.runtime_codes in [107020, 507046]", {("runtime", 107020), ("runtime", 507046)}),
        ("log.level == ERROR and message ~ /timeout/i", {("level", "ERROR")}),
        ("log.logger == GE and message contains 'compile'", {("literal", ("compile", False))}),
        (
            "log.logger == PRECISION and message startswith 'precision first'",
            {("module", "PRECISION")},
        ),
        ("error.code == EI0002 or log.level == ERROR", {("code", "EI0002"), ("level", "ERROR")}),
        ("log.level == DEBUG and error.code == E19999", {("code", "E19999")}),
    ],
)
def test_index_keys_take_the_cheapest_operand_of_an_and(condition: str, keys: set[object]) -> None:
    assert compile_condition(parse_condition(condition)).keys == keys


def test_conditions_that_cannot_be_indexed() -> None:
    assert compile_condition(parse_condition("not log.level == DEBUG")).keys is None
    assert compile_condition(parse_condition("process.pid > 1")).keys is None
    assert compile_condition(parse_condition("log.level == ERROR or process.pid > 1")).keys is None


def test_required_literal_of_a_regex() -> None:
    assert required_literal("wait socket (\\w+) timeout") == "wait socket "
    assert required_literal("a|b") is None


def test_a_condition_of_ten_thousand_operands_compiles_and_runs_without_deep_recursion() -> None:
    record = parse_one("[ERROR] RUNTIME(1,python):2025-01-01-00:00:00.000.000 [a.cc:1] 1 boom")
    every = compile_condition(parse_condition(" and ".join(["log.level == ERROR"] * 10_000)))
    some = compile_condition(parse_condition(" or ".join(["log.level == INFO"] * 10_000)))
    assert every.predicate(record) is True
    assert some.predicate(record) is False


def test_a_regex_that_needs_backtracking_is_a_compile_error_that_says_why() -> None:
    with pytest.raises(CompileError) as refused:
        compile_condition(parse_condition("message ~ /(a+)+\\1$/"))
    assert str(refused.value) == (
        "bad regex /(a+)+\\1$/: a backreference (\\1, (?P=name)) needs a backtracking engine "
        "(rule patterns run in RE2, in linear time)"
    )
