"""A loaded rule: the settings its pack gave it and its compiled condition.

Plain frozen dataclasses, so that rules come back from the cache (rules/rule_cache.py) without
pydantic: rules/schema.py says what a pack file may say and validates it, `RuleSpec.from_data`
keeps what it validated. A test holds the two to the same fields and defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from npuwatch.rules.compiler import Extractor, IndexKey, Predicate
from npuwatch.rules.condition import Node
from npuwatch.rules.patterns import LinearPattern

Severity = Literal["critical", "error", "warning", "info"]
SEVERITY_RANK = {"critical": 4, "error": 3, "warning": 2, "info": 1}
Layer = Literal[
    "application",
    "graph-engine",
    "runtime",
    "driver",
    "communication",
    "operator-compile",
    "framework",
    "operations",
]
"""Where in the stack: application / AscendCL, graph engine, runtime, driver and device,
communication (HCCL/HCCP), operator compile, framework (torch_npu, MindSpore, vLLM), and
operations (the health of logging and of npuwatch itself)."""


@dataclass(frozen=True)
class Threshold:
    count: int
    """Matches needed within the window to fire."""
    within: float
    """The window, in seconds."""
    by: tuple[str, ...] = ()
    """Fields that group the count."""


@dataclass(frozen=True)
class Context:
    before: int = 50
    after: int = 5


@dataclass(frozen=True)
class Dedupe:
    within: float = 60.0
    by: tuple[str, ...] = ("host.name", "process.pid")


@dataclass(frozen=True)
class Example:
    text: str
    path: str | None = None


@dataclass(frozen=True)
class Examples:
    match: tuple[Example, ...] = ()
    no_match: tuple[Example, ...] = ()


@dataclass(frozen=True)
class RuleSpec:
    """What a rule's pack says of it, validated (see rules/schema.py for each field's rules)."""

    id: str
    title: str
    when: str
    severity: Severity
    layer: Layer
    category: str
    advice: str
    extract: tuple[str, ...] = ()
    threshold: Threshold | None = None
    context: Context = Context()
    dedupe: Dedupe = Dedupe()
    symptom: bool = False
    fallback: int = 0
    examples: Examples = Examples()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RuleSpec:
        """The spec of a validated rule's data (`RuleSchema.model_dump()`)."""
        threshold = data["threshold"]
        examples = data["examples"]
        return cls(
            id=data["id"],
            title=data["title"],
            when=data["when"],
            severity=data["severity"],
            layer=data["layer"],
            category=data["category"],
            advice=data["advice"],
            extract=tuple(data["extract"]),
            threshold=(
                None
                if threshold is None
                else Threshold(threshold["count"], threshold["within"], tuple(threshold["by"]))
            ),
            context=Context(**data["context"]),
            dedupe=Dedupe(data["dedupe"]["within"], tuple(data["dedupe"]["by"])),
            symptom=data["symptom"],
            fallback=data["fallback"],
            examples=Examples(
                tuple(Example(**example) for example in examples["match"]),
                tuple(Example(**example) for example in examples["no_match"]),
            ),
        )


@dataclass(frozen=True, eq=False)
class Rule:
    """A rule ready to run: its spec, where it came from, and its compiled condition."""

    spec: RuleSpec
    pack: str
    origin: str
    """`file:line` of the rule, for messages."""
    predicate: Predicate
    keys: frozenset[IndexKey] | None
    extractor: Extractor | None = None
    patterns: tuple[LinearPattern, ...] = field(default=())
    exact: bool = False
    """Found through its index keys, a record matches without testing the condition."""
    node: Node | None = None
    """The condition's syntax tree, which the index specialises per plan."""

    @property
    def id(self) -> str:
        return self.spec.id
