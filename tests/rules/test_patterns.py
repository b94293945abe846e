"""Rule patterns in RE2: the meaning Python's `re` gives them, linear time whatever the pattern,
and a refusal with the reason for what only a backtracking engine can do."""

from __future__ import annotations

import copy
import re
import threading
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.rules.patterns import (
    MAX_GROUP_NESTING,
    PatternError,
    compile_pattern,
    fast_path_in_use,
)
from tests.conftest import FIXTURES, parse
from tests.rules.test_faultdiag import KNOWLEDGE_BASE, convert

FLAG_BITS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def python_says(pattern: str, flags: str, text: str) -> bool:
    bits = 0
    for letter in flags:
        bits |= FLAG_BITS[letter]
    return re.search(pattern, text, bits) is not None


def fixture_texts() -> list[str]:
    """The raw text, message and whole line of every record of the fixture trees."""
    texts: list[str] = []
    for log in sorted((FIXTURES / "trees").rglob("*.log")):
        for record in parse(log.read_bytes(), path=str(log)):
            texts += [record.original, record.message, record.text]
    return texts


def rule_patterns(locations: list[Path]) -> set[tuple[str, str]]:
    """Every `~` pattern (with its flags) and extract pattern of the packs at `locations`."""
    found: set[tuple[str, str]] = set()
    for rule in load_rules(locations).rules:
        found.update((pattern.source, pattern.flags) for pattern in rule.patterns)
        stack = [rule.node]
        while stack:
            node = stack.pop()
            if hasattr(node, "operands"):
                stack.extend(node.operands)
            elif hasattr(node, "operand"):
                stack.append(node.operand)
            elif node is not None and node.op == "~":
                found.add((str(node.values[0]), node.flags))
    return found


def test_every_pattern_of_the_default_packs_matches_what_python_matches() -> None:
    texts = fixture_texts()
    texts += [text.upper() for text in texts[:2000]] + ["retry\n", "ERROR CODE EZ9999\n", ""]
    patterns = rule_patterns([DEFAULT_PACKS])
    assert len(patterns) > 40
    for source, flags in patterns:
        compiled = compile_pattern(source, flags)
        wrong = [t for t in texts if compiled.search(t) != python_says(source, flags, t)]
        assert not wrong, (source, flags, wrong[:3])


def test_the_patterns_of_a_faultdiag_import_match_what_python_matches(tmp_path: Path) -> None:
    knowledge = copy.deepcopy(KNOWLEDGE_BASE)
    knowledge["knowledge-repository"]["ODD_KEYWORDS"] = {
        "attribute": {"class": "Software"},
        "regex": {"in": ["a/b (c)", "x.y*z?", "line\nbreak", "[E30009]"]},
    }
    pack = convert(tmp_path, knowledge)
    texts = [*fixture_texts(), "a/b (c) then x.y*z? and line\nbreak [E30009]", "ctx is NULL"]
    patterns = rule_patterns([pack])
    assert len(patterns) == 5
    for source, flags in patterns:
        compiled = compile_pattern(source, flags)
        assert [compiled.search(t) for t in texts] == [python_says(source, flags, t) for t in texts]
    assert compile_pattern(*sorted(p for p in patterns if "break" in p[0])[0]).search(texts[-2])


def test_extract_groups_are_the_groups_python_finds() -> None:
    pattern = compile_pattern(r"remote rank\[(?P<remote_rank>\d+)\](?: on (?P<host>\S+))?")
    text = "wait for remote rank[13] on node-4 timed out"
    assert pattern.named_groups(text) == {"remote_rank": "13", "host": "node-4"}
    assert pattern.named_groups("remote rank[7]") == {"remote_rank": "7"}
    assert pattern.named_groups("nothing here") is None
    assert pattern.groupindex == {"remote_rank": 1, "host": 2}


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "expected"),
    [
        ("timeout", "i", "HCCL TimeOut after 1800s", True),
        ("^a.c$", "m", "x\nabc\ny", True),
        ("^a.c$", "", "x\nabc\ny", False),
        ("a.c", "", "a\nc", False),
        ("a.c", "s", "a\nc", True),
        ("a b  # a comment\n c", "x", "abc", True),
        ("(?i)heart(?-i:BEAT)", "", "HEARTBEAT", True),
        ("(?i)heart(?-i:BEAT)", "", "HEARTbeat", False),
        ("end$", "", "the end\n", True),  # Python's $ takes a last newline
        ("end\\Z", "", "the end\n", False),
        ("\\d+", "", "rank ٣", True),  # an Arabic-Indic digit is a digit to Python
        ("(?a)\\d+", "", "rank ٣", False),
        ("\\w+失败", "", "任务失败", True),
        ("[^\\W\\d_]+", "", "_42ü", True),
        ("\\s", "", "a\u3000b", True),
        ("(?a)[\\S]", "", "\x0b", False),
        ("K", "i", "k", True),
        ("", "", "", True),
    ],
)
def test_flags_classes_and_anchors_keep_pythons_meaning(
    pattern: str, flags: str, text: str, expected: bool
) -> None:
    assert python_says(pattern, flags, text) is expected
    assert compile_pattern(pattern, flags).search(text) is expected


@pytest.mark.parametrize(
    "category", ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[^\\W\\d]", "[^\\W_]", "[\\W\\d]"]
)
def test_each_class_holds_the_characters_python_gives_it(category: str) -> None:
    """Over every assigned code point (both engines' Unicode tables may differ on the newest)."""
    ours = compile_pattern(category)
    python = re.compile(category)
    for ascii_only in (False, True):
        if ascii_only:
            ours, python = compile_pattern("(?a)" + category), re.compile("(?a)" + category)
        wrong = [
            hex(code)
            for code in range(0x110000)
            if unicodedata.category(chr(code)) not in ("Cn", "Cs")
            and ours.search(chr(code)) != (python.search(chr(code)) is not None)
        ]
        assert wrong == [], (category, ascii_only, wrong[:5])


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a+)+\1$", "a backreference"),
        (r"(?P<x>a)(?P=x)", "a backreference"),
        (r"time(?=out)", "a lookahead"),
        (r"(?<!un)known", "a negative lookbehind"),
        (r"(a)?(?(1)b|c)", "a conditional group"),
        (r"(?>a+)b", "an atomic group"),
        (r"a++b", "a possessive repeat"),
        (r"a{1001}", "RE2 cannot run it: invalid repetition size"),
        ("(" * (MAX_GROUP_NESTING + 1) + "a" + ")" * (MAX_GROUP_NESTING + 1), "nested deeper"),
        ("(?:" * 10_000 + "a" + ")" * 10_000, "nested deeper"),
        (r"(a", "missing ), unterminated subpattern"),
    ],
)
def test_what_only_a_backtracking_engine_can_do_is_refused_with_the_reason(
    pattern: str, reason: str
) -> None:
    with pytest.raises(PatternError) as refused:
        compile_pattern(pattern)
    assert reason in str(refused.value)
    assert "\n" not in str(refused.value)


def test_groups_nested_to_the_limit_are_accepted() -> None:
    deepest = "(" * MAX_GROUP_NESTING + "a" + ")" * MAX_GROUP_NESTING
    assert compile_pattern(deepest).search("xa")
    # Brackets inside sets and escaped ones are not groups.
    assert compile_pattern(r"[(((((]" * 60 + r"\(" * 60).search("(" * 120)


def test_a_pattern_catastrophic_for_backtracking_runs_through_a_long_line() -> None:
    """`(a+)+$` on 40 a's and a b takes Python's re about a week; RE2 reads the line once."""
    results: list[bool] = []
    worker = threading.Thread(
        target=lambda: results.extend(
            compile_pattern(p).search("a" * 100_000 + "b")
            for p in ("(a+)+$", "(x+x+)+y", "(a|aa)+$", "(.*a){20}c")
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a bound on a hang, not a measure of speed
    assert results == [False, False, False, False]


def test_text_that_is_not_valid_utf8_is_searched_without_an_error() -> None:
    pattern = compile_pattern("bad (?P<what>.)")
    assert pattern.search("a bad \ud800 surrogate")
    assert pattern.named_groups("a bad \ud800") == {"what": "\ufffd"}


def test_this_google_re2_is_called_through_its_fast_path() -> None:
    assert fast_path_in_use(compile_pattern("time ?out"))


_PIECES = st.sampled_from(
    ["a", "b", "A", "é", "É", "1", "٣", " ", "\n", ".", "\\d", "\\w", "\\s", "\\W", "[ab]",
     "[^a]", "[a-c]", "^", "$", "\\A", "\\Z", "(?:ab)", "x|", "|y"]
)  # fmt: skip
_REPEATS = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "*?", "+?"])


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_PIECES, _REPEATS), min_size=1, max_size=6))
    text = ""
    for piece, repeat in parts:
        repeatable = piece not in ("^", "$", "\\A", "\\Z", "x|", "|y")
        text += f"(?:{piece}){repeat}" if repeat and repeatable else piece
    return text


@given(
    pattern=patterns(),
    flags=st.sampled_from(["", "i", "m", "s", "ims"]),
    text=st.text(alphabet="abAé É1٣ \nxy_", max_size=12),
)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_pattern_of_plain_pieces_matches_where_python_matches(
    pattern: str, flags: str, text: str
) -> None:
    assert compile_pattern(pattern, flags).search(text) == python_says(pattern, flags, text)
