"""What a record is tested against, decided once for all the records that look alike.

A record's *signature* is its plan key (level, module, format, kind), its flags, its codes and
the literal keys its text holds: all the index looks at. Records of one signature are found by the
same rules, and every test that reads only those fields (`error.code ~ /9999$/`, `ascend.flags ==
pre_clock_sync`) answers the same for all of them. A profile keeps, per signature, the rules such
tests prove, decided on the first record that has the signature, and what remains of the other
conditions once their comparisons on those fields are decided (`error.code == EI0006 or message
~ /socket.*timeout/i` is left a pattern for a record without the code), with where each needs a
word of its text (rules/word_search.py): most records of a plog's errors match their rules with
no test at all, and the rest are tested only where the batch's search found a word.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from npuwatch.records import Record
from npuwatch.rules.compiler import Predicate, compile_predicate
from npuwatch.rules.condition import Comparison, Node, settle
from npuwatch.rules.fields import resolve_field
from npuwatch.rules.model import Rule
from npuwatch.rules.word_search import WordSearch

SIGNATURE_FIELDS = frozenset(
    {
        "log.level",
        "log.logger",
        "ascend.format",
        "ascend.flags",
        "error.code",
        "ascend.error_codes",
        "ascend.runtime_codes",
        "ascend.framework_code",
    }
)
"""Fields a signature holds: a test that reads no others answers alike for its records. (Not
`ascend.kind`: the plan key takes the stream's kind, a test reads the record's source.)"""

Test = tuple[Rule, Predicate, int | None]
"""A rule, the test a record still has to pass, and the bits of the word groups (word_search.py)
one of which the record must hold for the test to pass (None: it may pass without any word)."""


class Profile:
    """What the records of one signature are tested against."""

    __slots__ = ("fixed", "matched", "places", "tests", "untargeted")

    def __init__(self, fixed: tuple[Rule, ...], tests: tuple[Test, ...], places: int) -> None:
        self.fixed = fixed
        """The rules every record of the signature matches, in rule order."""
        self.matched = most_specific(fixed)
        """What a record matches when none of `tests` passes."""
        self.tests = tests
        """The rules to test on each record, in rule order."""
        self.places = places
        """Where some test needs a word (word_search.TEXT, ORIGINAL): the records to search."""
        self.untargeted = any(needs is None for _, _, needs in tests)
        """Some test needs no word: it runs on every record of the signature."""


def build_profile(
    entries: Iterable[tuple[Rule, Predicate | None, Node | None]],
    record: Record,
    order: dict[Rule, int],
    words: WordSearch,
) -> Profile:
    """The profile of `record`'s signature from the entries the index gives it: each rule with
    the test left (None: proven) and the condition that test compiles (None: unknown)."""
    fixed: list[Rule] = []
    tests: list[Test] = []
    places = 0
    for rule, predicate, node in sorted(entries, key=lambda entry: order[entry[0]]):
        if predicate is None:
            fixed.append(rule)
            continue
        if node is None:
            tests.append((rule, predicate, None))
            continue
        left = decide(node, record)
        if left is True:
            fixed.append(rule)
        elif left is not False:
            if left is not node:
                predicate = compile_predicate(left, rule.extractor)
            needs = words.needed(left)
            for group, place in enumerate(words.places):
                if needs is not None and needs >> group & 1:
                    places |= place
            tests.append((rule, predicate, needs))
    return Profile(tuple(fixed), tuple(tests), places)


def decide(node: Node, record: Record) -> Node | bool:
    """What is left of a condition once its comparisons on the signature's fields are decided
    on `record`: True, False, or the rest to test on each record of the signature."""

    def on_signature(comparison: Comparison) -> Node | bool:
        if resolve_field(comparison.field) not in SIGNATURE_FIELDS:
            return comparison
        return bool(_comparison_test(comparison)(record))

    return settle(node, on_signature)


def most_specific(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """The rules of the most specific fallback tier among `rules` (only they fire)."""
    if len(rules) < 2:
        return tuple(rules)
    tier = min(rule.spec.fallback for rule in rules)
    return tuple(rule for rule in rules if rule.spec.fallback == tier)


@functools.lru_cache(maxsize=4096)
def _comparison_test(node: Comparison) -> Predicate:
    return compile_predicate(node)
