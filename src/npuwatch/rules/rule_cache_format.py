"""The rule cache's file: plain JSON written field by field, and read back checked.

    npuwatch-rule-cache 1 <stamp>\\n
    {"packs": [{"name": ..., "disable": [...], "rules": [{"spec": {...}, "origin": ...,
                "condition": [node, ...]}, ...]}, ...]}

The first line is compared with the stamp the packs have now before anything after it is
parsed. A condition is its nodes in postfix order (a node names the earlier nodes it joins, the
last is the root), so that the JSON is never nested deeper than a few levels whatever the
condition, and no tree read back can loop or nest deeper than a condition the grammar accepts.
The rules' patterns are kept as RE2 reads them, with their prefilters (rules/patterns.py), so
that a hit does not translate them again.
Every field is checked as it is read: anything unexpected is `Malformed`, which the cache takes
as a miss. Never pickle: a cache file is data, whoever wrote it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, get_args

from npuwatch.rules.condition import MAX_TREE_DEPTH, And, Comparison, Node, Not, Or
from npuwatch.rules.model import SEVERITY_RANK, Layer, RuleSpec
from npuwatch.rules.patterns import PatternParts
from npuwatch.rules.regex_literals import Literals

CachedRule = tuple[RuleSpec, str, Node]
"""A rule as the cache keeps it: its spec, its origin (`file:line`), its condition."""
CachedPack = tuple[str, tuple[str, ...], tuple[CachedRule, ...]]
"""A pack as the cache keeps it: name, disable list, rules."""

_HEADER = "npuwatch-rule-cache 1 "
_OPS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "range", "~", "contains", "startswith"})
_LAYERS = frozenset(get_args(Layer))


class Malformed(ValueError):
    """A cache file that is not one this version wrote for these packs."""


def encode(stamp: str, packs: Sequence[CachedPack], patterns: Sequence[PatternParts] = ()) -> bytes:
    body = {
        "patterns": [
            [
                part.source,
                part.flags,
                part.translated,
                None if part.literals is None else list(part.literals.needles),
                part.literals is not None and part.literals.lowered,
                part.literals is not None and part.literals.decisive,
            ]
            for part in patterns
        ],
        "packs": [
            {
                "name": name,
                "disable": list(disable),
                "rules": [
                    {"spec": _spec_data(spec), "origin": origin, "condition": _nodes(node)}
                    for spec, origin, node in rules
                ],
            }
            for name, disable, rules in packs
        ],
    }
    return (_HEADER + stamp + "\n" + json.dumps(body, separators=(",", ":"))).encode("utf-8")


def decode(data: bytes, stamp: str) -> tuple[list[CachedPack], list[PatternParts]]:
    """The packs and patterns of a cache file written under `stamp` (Malformed otherwise)."""
    header = (_HEADER + stamp + "\n").encode("utf-8")
    if not data.startswith(header):
        raise Malformed("another stamp")
    try:
        body = json.loads(data[len(header) :])
    except (ValueError, RecursionError) as error:
        raise Malformed(f"not JSON: {error}") from None
    packs = []
    for pack in _list(_field(body, "packs")):
        rules = tuple(
            (
                _spec(_field(rule, "spec")),
                _text(_field(rule, "origin")),
                _tree(_list(_field(rule, "condition"))),
            )
            for rule in _list(_field(pack, "rules"))
        )
        disable = tuple(_text(item) for item in _list(_field(pack, "disable")))
        packs.append((_text(_field(pack, "name")), disable, rules))
    return packs, [_pattern(_list(item)) for item in _list(_field(body, "patterns"))]


def _pattern(item: list[Any]) -> PatternParts:
    if len(item) != 6:
        raise Malformed("a pattern")
    source, flags, translated = _text(item[0]), _text(item[1]), _text(item[2])
    literals = None
    if item[3] is not None:
        needles = tuple(_text(needle) for needle in _list(item[3]))
        if not needles or not all(needles):
            raise Malformed("a pattern's words")
        literals = Literals(needles, _boolean(item[4]), _boolean(item[5]))
    return PatternParts(source, flags, translated, literals)


# --- conditions -----------------------------------------------------------------------------


def _nodes(root: Node) -> list[list[Any]]:
    """The nodes of a condition in postfix order (without recursion: trees from the grammar are
    shallow, but this does not rely on it)."""
    written: list[list[Any]] = []
    index: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if not children_done and children:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))
            continue
        if isinstance(node, Comparison):
            entry: list[Any] = ["cmp", node.field, node.op, list(node.values), node.flags]
        elif isinstance(node, Not):
            entry = ["not", index[id(node.operand)]]
        else:
            kind = "and" if isinstance(node, And) else "or"
            entry = [kind, [index[id(child)] for child in node.operands]]
        index[id(node)] = len(written)
        written.append([*entry, node.loc])
    return written


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Not):
        return (node.operand,)
    if isinstance(node, And | Or):
        return node.operands
    return ()


def _tree(entries: list[Any]) -> Node:
    """The condition of postfix `entries`, each joining only earlier ones (so no loop)."""
    built: list[Node] = []
    depths: list[int] = []
    for entry in entries:
        item = _list(entry)
        if not item:
            raise Malformed("an empty node")
        kind, loc = item[0], _integer(item[-1])
        if kind == "cmp" and len(item) == 6:
            values = tuple(_value(value) for value in _list(item[3]))
            flags = _text(item[4])
            if _text(item[2]) not in _OPS | {"exists"} or not set(flags) <= set("imsx"):
                raise Malformed("a comparison")
            built.append(Comparison(_text(item[1]), item[2], values, flags, loc))
            depths.append(1)
            continue
        if kind == "not" and len(item) == 3:
            child = _earlier(item[1], len(built))
            built.append(Not(built[child], loc))
            depths.append(depths[child] + 1)
        elif kind in ("and", "or") and len(item) == 3:
            children = [_earlier(child, len(built)) for child in _list(item[1])]
            if len(children) < 2:
                raise Malformed("an 'and' or 'or' of fewer than two")
            operands = tuple(built[child] for child in children)
            built.append(And(operands, loc) if kind == "and" else Or(operands, loc))
            depths.append(max(depths[child] for child in children) + 1)
        else:
            raise Malformed(f"a node {kind!r}")
        if depths[-1] > MAX_TREE_DEPTH:
            raise Malformed("a condition nested too deep")
    if not built:
        raise Malformed("an empty condition")
    return built[-1]


def _earlier(value: Any, count: int) -> int:
    position = _integer(value)
    if not 0 <= position < count:
        raise Malformed("a node that is not before the one it is in")
    return position


def _value(value: Any) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Malformed("a value")
    if isinstance(value, float) and not math.isfinite(value):
        raise Malformed("a value")
    return value


# --- specs ----------------------------------------------------------------------------------


def _spec_data(spec: RuleSpec) -> dict[str, Any]:
    threshold = spec.threshold
    return {
        "id": spec.id,
        "title": spec.title,
        "when": spec.when,
        "severity": spec.severity,
        "layer": spec.layer,
        "category": spec.category,
        "advice": spec.advice,
        "extract": list(spec.extract),
        "threshold": None
        if threshold is None
        else {"count": threshold.count, "within": threshold.within, "by": list(threshold.by)},
        "context": {"before": spec.context.before, "after": spec.context.after},
        "dedupe": {"within": spec.dedupe.within, "by": list(spec.dedupe.by)},
        "symptom": spec.symptom,
        "fallback": spec.fallback,
        "examples": {
            "match": [{"text": e.text, "path": e.path} for e in spec.examples.match],
            "no_match": [{"text": e.text, "path": e.path} for e in spec.examples.no_match],
        },
    }


def _spec(data: Any) -> RuleSpec:
    """A spec read back, each field checked as rules/schema.py would have left it."""
    fields = {name: _text(_field(data, name)) for name in _TEXT_FIELDS}
    if fields["severity"] not in SEVERITY_RANK or fields["layer"] not in _LAYERS:
        raise Malformed("a severity or layer")
    threshold = _field(data, "threshold")
    context, dedupe = _field(data, "context"), _field(data, "dedupe")
    examples = _field(data, "examples")
    checked = {
        **fields,
        "extract": [_text(item) for item in _list(_field(data, "extract"))],
        "threshold": None
        if threshold is None
        else {
            "count": _integer(_field(threshold, "count"), low=1),
            "within": _seconds(_field(threshold, "within")),
            "by": [_text(item) for item in _list(_field(threshold, "by"))],
        },
        "context": {
            "before": _integer(_field(context, "before"), high=1000),
            "after": _integer(_field(context, "after"), high=1000),
        },
        "dedupe": {
            "within": _seconds(_field(dedupe, "within")),
            "by": [_text(item) for item in _list(_field(dedupe, "by"))],
        },
        "symptom": _boolean(_field(data, "symptom")),
        "fallback": _integer(_field(data, "fallback"), high=3),
        "examples": {
            side: [_example(item) for item in _list(_field(examples, side))]
            for side in ("match", "no_match")
        },
    }
    return RuleSpec.from_data(checked)


_TEXT_FIELDS = ("id", "title", "when", "severity", "layer", "category", "advice")


def _example(data: Any) -> dict[str, Any]:
    path = _field(data, "path")
    return {"text": _text(_field(data, "text")), "path": None if path is None else _text(path)}


def _field(data: Any, name: str) -> Any:
    if not isinstance(data, dict) or name not in data:
        raise Malformed(f"no {name!r}")
    return data[name]


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise Malformed("a list")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Malformed("a text")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Malformed("a true or false")
    return value


def _integer(value: Any, low: int = 0, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed("a whole number")
    if value < low or (high is not None and value > high):
        raise Malformed("a number out of range")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed("a duration")
    if not (math.isfinite(value) and value >= 0):
        raise Malformed("a duration")
    return float(value)
