"""Running each rule's examples: lines that must match it and lines that must not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone

from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.rules.model import Example, Rule


@dataclass(frozen=True)
class ExampleFailure:
    rule: Rule
    example: Example
    expected_match: bool

    def __str__(self) -> str:
        wanted = "should match but does not" if self.expected_match else "matches but should not"
        text = (
            self.example.text if len(self.example.text) < 160 else self.example.text[:157] + "..."
        )
        return f"{self.rule.origin}: rule {self.rule.id}: example {wanted}: {text}"


def example_matches(rule: Rule, example: Example) -> bool:
    """Whether the rule's condition holds for a record parsed from the example text.

    Thresholds and dedupe are not part of this: the example tests the condition.
    """
    records = parse_bytes(example.text.encode("utf-8"), LocalClock(timezone.utc), path=example.path)
    return any(rule.predicate(record) for record in records)


def run_examples(rules: list[Rule]) -> tuple[int, list[ExampleFailure]]:
    """The number of examples run, and those that failed."""
    failures: list[ExampleFailure] = []
    count = 0
    for rule in rules:
        for expected, examples in (
            (True, rule.spec.examples.match),
            (False, rule.spec.examples.no_match),
        ):
            for example in examples:
                count += 1
                if example_matches(rule, example) != expected:
                    failures.append(ExampleFailure(rule, example, expected))
    return count, failures
