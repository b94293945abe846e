"""The rule index: which rules a record can match, decided with few lookups.

Records are grouped by their *plan key* — level, module, format and log kind — which a batch of
a plog has only a few dozen of. For each key the index builds a plan once: the rules keyed by
those four values, each with its condition *specialised* to the key (comparisons on level,
module, format and kind are decided in advance, so a rule that cannot apply to a module drops
out, and one that the key proves needs no test at all). Codes, flags and literals add their own
rules only for the records that carry them. A record's *signature* adds those to its plan key:
the index keeps a profile per signature (rules/profiles.py), what its records are tested against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from npuwatch.records import Flag, Record
from npuwatch.rules.compiler import Predicate, compile_predicate, condition_keys
from npuwatch.rules.condition import Comparison, Node, settle
from npuwatch.rules.fields import FIELDS, resolve_field
from npuwatch.rules.loader import RuleSet
from npuwatch.rules.model import Rule
from npuwatch.rules.profiles import Profile, build_profile
from npuwatch.rules.rule_facts import DedupeTail, RuleFacts, facts_of
from npuwatch.rules.word_search import WordSearch

PlanKey = tuple[str | None, str | None, str, str]
"""(level, module, format, kind)."""
Entry = tuple[Rule, Predicate | None]
"""A rule and the test a record still has to pass (None: the key proves the match)."""

STREAM_FIELDS = frozenset({"host.name", "log.file.path", "ascend.kind", "ascend.channel"})
"""Fields that are the same for every record of a stream."""
_DIMENSIONS = {"log.level": 0, "log.logger": 1, "ascend.format": 2, "ascend.kind": 3}
MAX_PROFILES = 65_536
"""Signatures kept at most (codes make many in a log of many different errors): the cache is
emptied when full, and refilled as records come."""
LiteralKey = tuple[str, bool]
"""A literal and whether its case is ignored."""


class Plan:
    """What a record with a given plan key is tested against."""

    __slots__ = ("counters", "entries", "nodes")

    def __init__(
        self,
        entries: tuple[Entry, ...],
        counters: tuple[Rule, ...],
        nodes: tuple[Node | None, ...],
    ) -> None:
        self.entries = entries
        self.counters = counters
        """Threshold rules that the key proves and that group by stream fields only: they are
        counted per batch instead of tested per record (DEBUG floods are most of a plog)."""
        self.nodes = nodes
        """The condition each entry's test compiles, specialised to the key (None: no test)."""


@dataclass
class RuleIndex:
    """Everything derived from a rule set, built aside and swapped as one object."""

    rules: list[Rule]
    order: dict[Rule, int]
    by_code: dict[str, list[Rule]] = field(default_factory=dict)
    by_code_prefix: dict[str, list[Rule]] = field(default_factory=dict)
    any_code: list[Rule] = field(default_factory=list)
    by_runtime: dict[int, list[Rule]] = field(default_factory=dict)
    any_runtime: list[Rule] = field(default_factory=list)
    by_framework: dict[str, list[Rule]] = field(default_factory=dict)
    any_framework: list[Rule] = field(default_factory=list)
    by_flag: dict[int, list[Rule]] = field(default_factory=dict)
    by_dimension: tuple[dict[str, list[Rule]], ...] = field(
        default_factory=lambda: ({}, {}, {}, {})
    )
    by_literal: dict[LiteralKey, list[Rule]] = field(default_factory=dict)
    always: list[Rule] = field(default_factory=list)
    counting: set[Rule] = field(default_factory=set)
    level_counters: dict[str, list[Rule]] = field(default_factory=dict)
    """Counting rules keyed by level alone, tallied with one count per batch."""
    levels: frozenset[str | None] = frozenset()
    modules: frozenset[str | None] = frozenset()
    kinds: frozenset[str] = frozenset()
    formats: frozenset[str] = frozenset()
    flag_mask: int = 0
    """The flags that bring a record rules of its own (codes, `ascend.flags` keys, and a line
    of another encoding when rules are keyed by literals): a record with other flags only, at a
    level, module and format no rule is keyed by, can match nothing."""
    everything: bool = False
    """Some rule must see every record (no index key, or keyed by format `slog`)."""
    plans: dict[PlanKey, Plan] = field(default_factory=dict)
    group_getters: dict[Rule, tuple[Callable[[Record], Any], ...]] = field(default_factory=dict)
    dedupe_getters: dict[Rule, tuple[Callable[[Record], Any], ...]] = field(default_factory=dict)
    facts: dict[Rule, RuleFacts] = field(default_factory=dict)
    """What each match of a rule needs, read once."""
    max_before: int = 0
    profiles: dict[tuple[Any, ...], Profile] = field(default_factory=dict)
    """Profiles by signature (rules/profiles.py), filled as records come."""
    _words: WordSearch | None = field(default=None, repr=False)

    @property
    def words(self) -> WordSearch:
        """The words of every rule's text tests, for the search of a batch (word_search.py);
        made at first use, which a command that reads no record never pays."""
        if self._words is None:
            self._words = WordSearch(rule.node for rule in self.rules if rule.node is not None)
        return self._words

    def plan(self, key: PlanKey) -> Plan:
        plan = self.plans.get(key)
        if plan is not None:
            return plan
        found: set[Rule] = set(self.always)
        for dimension, value in enumerate(key):
            if value is not None:
                found.update(self.by_dimension[dimension].get(value, ()))
        entries: list[Entry] = []
        nodes: list[Node | None] = []
        counters: list[Rule] = []
        for rule in sorted(found, key=self.order.__getitem__):
            if rule in self.counting:
                counters.append(rule)
                continue
            assert rule.node is not None
            node = specialise(rule.node, key)
            if node is False:
                continue
            if node is not True and _found_elsewhere(node, rule):
                continue  # what is left needs a code, flag or literal: extra_entries brings it
            predicate = None if node is True else compile_predicate(node, rule.extractor)
            entries.append((rule, predicate))
            nodes.append(None if node is True else node)
        plan = Plan(tuple(entries), tuple(counters), tuple(nodes))
        self.plans[key] = plan
        return plan

    def profile(
        self, signature: tuple[Any, ...], record: Record, literals: tuple[LiteralKey, ...]
    ) -> Profile:
        """The profile of a signature (plan key first, then flags, literal keys and codes), made
        from `record`, which has it, and kept; `literals`: the literal keys in its text."""
        key: PlanKey = signature[:4]
        plan = self.plan(key)
        entries: list[tuple[Rule, Predicate | None, Node | None]] = [
            (rule, test, node) for (rule, test), node in zip(plan.entries, plan.nodes, strict=True)
        ]
        if record.flags or literals:
            have = {rule for rule, _ in plan.entries}
            entries += [
                (rule, test, rule.node)
                for rule, test in self.extra_entries(record, literals)
                if rule not in have
            ]
        profile = build_profile(entries, record, self.order, self.words)
        if len(self.profiles) >= MAX_PROFILES:
            self.profiles.clear()
        self.profiles[signature] = profile
        return profile

    def literals_in(self, record: Record) -> tuple[LiteralKey, ...]:
        """The literal keys whose literal is in the record's original text."""
        original = record.original
        lowered = None
        found: list[LiteralKey] = []
        for key in self.by_literal:
            text, ignore_case = key
            if ignore_case:
                if lowered is None:
                    lowered = original.lower()
                if text.lower() in lowered:
                    found.append(key)
            elif text in original:
                found.append(key)
        return tuple(found)

    def extra_entries(
        self, record: Record, literals: tuple[LiteralKey, ...] | None = None
    ) -> list[Entry]:
        """Rules found through the codes, flags and literals of a record (`literals`: the
        literal keys in its text, when they were looked for already)."""
        found: list[Rule] = []
        flags = record.flags
        if flags & Flag.HAS_CODES:
            for code in record.error_codes:
                found.extend(self.by_code.get(code, ()))
                found.extend(self.by_code_prefix.get(code[:2], ()))
            if record.error_codes:
                found.extend(self.any_code)
            for number in record.runtime_codes:
                found.extend(self.by_runtime.get(number, ()))
            if record.runtime_codes:
                found.extend(self.any_runtime)
            if record.framework_code is not None:
                found.extend(self.by_framework.get(record.framework_code, ()))
                found.extend(self.any_framework)
        for bit, rules in self.by_flag.items():
            if flags & bit:
                found.extend(rules)
        if self.by_literal:
            for key in self.literals_in(record) if literals is None else literals:
                found.extend(self.by_literal[key])
        return [(rule, None if rule.exact else rule.predicate) for rule in set(found)]


def build_index(ruleset: RuleSet) -> RuleIndex:
    rules = list(ruleset.rules)
    index = RuleIndex(rules=rules, order={rule: i for i, rule in enumerate(rules)})
    tables: dict[str, dict[Any, list[Rule]]] = {
        "code": index.by_code,
        "code_prefix": index.by_code_prefix,
        "runtime": index.by_runtime,
        "framework": index.by_framework,
        "level": index.by_dimension[0],
        "module": index.by_dimension[1],
        "format": index.by_dimension[2],
        "kind": index.by_dimension[3],
        "literal": index.by_literal,
    }
    tails: dict[tuple[str | None, ...], DedupeTail] = {}
    for rule in rules:
        spec = rule.spec
        index.group_getters[rule] = tuple(
            _getter(name) for name in (spec.threshold.by if spec.threshold else ())
        )
        index.dedupe_getters[rule] = tuple(_getter(name) for name in spec.dedupe.by)
        index.facts[rule] = facts_of(rule, index.dedupe_getters[rule], tails)
        index.max_before = max(index.max_before, spec.context.before)
        if rule.keys is None:
            index.always.append(rule)
            continue
        if (
            spec.threshold is not None
            and rule.exact
            and all(kind == "level" for kind, _ in rule.keys)
            and set(spec.threshold.by) <= STREAM_FIELDS
        ):
            index.counting.add(rule)
            for _, level in rule.keys:
                index.level_counters.setdefault(level, []).append(rule)
            continue
        for kind, value in rule.keys:
            if kind == "any_code":
                index.any_code.append(rule)
            elif kind == "any_runtime":
                index.any_runtime.append(rule)
            elif kind == "any_framework":
                index.any_framework.append(rule)
            elif kind == "flag":
                bit = Flag.BY_NAME.get(value)
                if bit is not None:
                    index.by_flag.setdefault(bit, []).append(rule)
            else:
                tables[kind].setdefault(value, []).append(rule)
    index.levels = frozenset(index.by_dimension[0])
    index.modules = frozenset(index.by_dimension[1])
    index.kinds = frozenset(index.by_dimension[3])
    index.formats = frozenset(index.by_dimension[2])
    index.flag_mask = Flag.HAS_CODES | sum(index.by_flag)
    if index.by_literal:
        index.flag_mask |= Flag.INVALID_ENCODING
    index.everything = bool(index.always) or "slog" in index.by_dimension[2]
    return index


def specialise(node: Node, key: PlanKey) -> Node | bool:
    """Decide what the plan key decides in a condition: True, False, or what is left to test."""

    def on_key(comparison: Comparison) -> Node | bool:
        dimension = _DIMENSIONS.get(resolve_field(comparison.field) or "")
        if dimension is None or comparison.op not in ("==", "!=", "in", "exists"):
            return comparison
        value = key[dimension]
        if comparison.op == "exists":
            return value is not None
        values = {str(item) for item in comparison.values}
        inside = value is not None and value in values
        return not inside if comparison.op == "!=" else inside

    return settle(node, on_key)


def _found_elsewhere(node: Node, rule: Rule) -> bool:
    """Whether a specialised condition can only hold for records that carry a code, a flag or
    a literal under which the rule is indexed anyway, so that the plan need not list it."""
    keys = condition_keys(node)
    return (
        keys is not None
        and rule.keys is not None
        and keys <= rule.keys
        and all(kind not in _PLAN_KEY_KINDS for kind, _ in keys)
    )


_PLAN_KEY_KINDS = frozenset({"level", "module", "format", "kind"})


def _getter(name: str) -> Callable[[Record], Any]:
    resolved = resolve_field(name)
    if resolved is None or resolved not in FIELDS:
        raise ValueError(f"unknown field {name!r}")
    getter = FIELDS[resolved].getter
    if FIELDS[resolved].kind in ("strs", "ints"):
        return lambda record: tuple(getter(record))
    return getter
