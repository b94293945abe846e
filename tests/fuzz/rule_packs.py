"""Rule packs as a site writes them, or as someone who wants the root agent to stall writes
them: conditions of every operator nested deep, numbers past 64 bits or past a float, regular
expressions that backtrack for ever, and packs whose YAML gives the wrong types."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FIELDS = (
    "message",
    "event.original",
    "log.level",
    "log.logger",
    "error.code",
    "process.pid",
    "ascend.runtime_codes",
    "log.origin.file.line",
    "ascend.device",
    "ascend.rank",
    "fields.cost_ms",
    "no.such.field",
)
VALUES = (
    "ERROR",
    "HCCL",
    "E30009",
    "42",
    "-1",
    "99999999999999999999999",
    "1" + "0" * 400 + ".0",  # a float literal that is infinite
    "1.5",
    '"a quoted \\" string"',
    "'x'",
    "ü",
)
CATASTROPHIC_REGEXES = (
    "(a+)+$",
    "(a|aa)+$",
    "(a|a?)+$",
    "(.*a){25}",
    "^(\\w+\\s?)*$",
    "(x+x+)+y",
)
ODD_REGEXES = (
    *CATASTROPHIC_REGEXES,
    "timeout",
    "",
    "(",
    "[z-a]",
    "a{1000000}",
    "(a)\\1",
    "(?<=a)b",
    "(?P<name>x)(?P=name)",
    "\\p{L}",
    "\\",
    "中文|错误",
    "(?i)x",
    "a" * 5000,
    "(" * 200 + "a" + ")" * 200,
)
FLAGS = ("", "i", "ims", "x", "q")


def regex_test(pattern: str, flags: str) -> str:
    escaped = pattern.replace("/", "\\/")
    return f"~ /{escaped}/{flags}"


def comparison() -> st.SearchStrategy[str]:
    field = st.sampled_from(FIELDS)
    value = st.sampled_from(VALUES)
    tail = st.one_of(
        st.builds(
            lambda op, v: f"{op} {v}", st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), value
        ),
        st.lists(value, max_size=4).map(lambda vs: "in [" + ", ".join(vs) + "]"),
        st.just("in E30000..E39999"),
        st.builds(regex_test, st.sampled_from(ODD_REGEXES), st.sampled_from(FLAGS)),
        value.map(lambda v: f"contains {v}"),
        value.map(lambda v: f"startswith {v}"),
        st.just("exists"),
    )
    return st.builds(lambda f, t: f"{f} {t}", field, tail)


def condition() -> st.SearchStrategy[str]:
    nested = st.recursive(
        comparison(),
        lambda inner: st.one_of(
            inner.map(lambda c: f"not {c}"),
            inner.map(lambda c: f"({c})"),
            st.lists(inner, min_size=2, max_size=4).map(" and ".join),
            st.lists(inner, min_size=2, max_size=4).map(" or ".join),
        ),
        max_leaves=8,
    )
    deep = st.builds(
        lambda kind, depth, c: {
            "not": "not " * depth + c,
            "parens": "(" * depth + c + ")" * depth,
            "and": " and ".join([c] * depth),
            "or": " or ".join([c] * depth),
        }[kind],
        st.sampled_from(["not", "parens", "and", "or"]),
        st.sampled_from([50, 300, 1000, 3000]),
        comparison(),
    )
    return nested | deep


WRONG_TYPES: tuple[Any, ...] = (
    None,
    5,
    -1,
    1e308,
    float("inf"),
    [],
    {},
    ["x"],
    {"a": 1},
    "",
    "x" * 3000,
    True,
)


@st.composite
def rule(draw: st.DrawFn, number: int) -> dict[str, Any]:
    text = draw(
        st.sampled_from(
            [
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
                "[ERROR] GE(1,p):2025-09-14-09:30:00.000.000 x",
                "x",
            ]
        )
    )
    body: dict[str, Any] = {
        "id": f"fuzz.rule-{number}",
        "title": "a generated rule",
        "when": draw(condition()),
        "severity": draw(st.sampled_from(["critical", "error", "warning", "info"])),
        "layer": "driver",
        "category": "device",
        "advice": "none",
    }
    if draw(st.booleans()):
        body["extract"] = [draw(st.sampled_from(ODD_REGEXES)) + "(?P<value>\\d+)"]
    if draw(st.booleans()):
        body["threshold"] = {
            "count": draw(st.sampled_from([1, 3, 2**63, 10**30])),
            "within": draw(
                st.sampled_from(["60s", "99999999999999999999d", float("inf"), 1e308, 0])
            ),
        }
    if draw(st.booleans()):
        body["dedupe"] = draw(
            st.sampled_from(["60s", float("inf"), "1e3s", 10**30, {"within": "1d", "by": ["x"]}])
        )
    if draw(st.booleans()):
        body["context"] = {"before": draw(st.sampled_from([0, 5, 1000, 10**9])), "after": 5}
    if draw(st.booleans()):
        body["examples"] = {"match": [text], "no_match": [text * draw(st.sampled_from([1, 100]))]}
    if draw(st.integers(0, 5)) == 0:
        key = draw(st.sampled_from([*sorted(body), "unknown"]))
        body[key] = draw(st.sampled_from(WRONG_TYPES))
    return body


@st.composite
def rule_pack(draw: st.DrawFn) -> Any:
    """A pack as YAML data: mostly well formed, sometimes with the wrong shape."""
    count = draw(st.integers(1, 3))
    pack: dict[str, Any] = {
        "pack": "fuzz-pack",
        "description": "generated",
        "rules": [draw(rule(number)) for number in range(count)],
    }
    if draw(st.booleans()):
        pack["disable"] = draw(st.sampled_from([["cann.code.memory"], ["no.such.rule"], "x", [5]]))
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.sampled_from(WRONG_TYPES))
    if shape == 1:
        pack[draw(st.sampled_from(["pack", "rules", "description", "extra"]))] = draw(
            st.sampled_from(WRONG_TYPES)
        )
    return pack


def adversarial_lines() -> list[str]:
    """Lines that make a backtracking engine work hardest on the pack's expressions: a run of
    the characters its patterns look for, then one that fails the match."""
    wanted = set()
    for pattern in ODD_REGEXES:
        wanted.update(ch for ch in pattern if ch.isalnum())
    runs = [ch * 40 + "!" for ch in sorted(wanted)] + [
        "a" * 5000 + "!",
        "x" * 30 + "y" * 30,
        "a " * 40 + "!",
    ]
    header = "[ERROR] GE(1,python3):2025-09-14-09:30:00.000.000 "
    return [header + run for run in runs] + runs
