"""A rule pack as the loader hands it on (its compiled rules), building a rule from its spec and
condition, and the problems that stop a pack from loading.

Below both ways a pack comes in, rules/pack_file.py (reading the file) and rules/rule_cache.py
(the cache), and rules/loader.py, which chooses between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npuwatch.problems import Problems
from npuwatch.records import Record
from npuwatch.rules.compiler import Extractor, compile_condition
from npuwatch.rules.condition import Node
from npuwatch.rules.model import Rule, RuleSpec
from npuwatch.rules.patterns import LinearPattern, compile_pattern


@dataclass(frozen=True)
class Problem:
    """Something wrong in a rule file, with where it is."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class RuleLoadError(Problems):
    """Rule files that do not load; `problems` names each file, line and column."""

    problems: Sequence[Problem]

    def __init__(self, problems: Sequence[Problem], advice: str | None = None) -> None:
        super().__init__(problems, advice)


@dataclass(frozen=True)
class Pack:
    """One pack file's name, the rule ids it switches off, and its rules in file order."""

    name: str
    disable: tuple[str, ...]
    rules: tuple[Rule, ...]


def build_rule(spec: RuleSpec, pack: str, origin: str, condition: Node) -> Rule:
    """A rule ready to run from its spec and its condition's syntax tree.

    Raises CompileError for a condition that parses but cannot work (rules/pack_file.py places
    it in the file), PatternError for an extract pattern that cannot run; a spec and tree that
    compiled once, as the cache holds, compile again.
    """
    patterns = tuple(compile_pattern(source) for source in spec.extract)
    extractor = _extractor(patterns) if patterns else None
    compiled = compile_condition(condition, extractor)
    return Rule(
        spec,
        pack,
        origin,
        compiled.predicate,
        compiled.keys,
        extractor,
        patterns,
        compiled.exact,
        condition,
    )


def _extractor(patterns: tuple[LinearPattern, ...]) -> Extractor:
    def extract(record: Record) -> dict[str, str]:
        values: dict[str, str] = {}
        message = record.message
        for pattern in patterns:
            groups = pattern.named_groups(message)
            if groups is not None:
                values.update(groups)
        return values

    return extract
