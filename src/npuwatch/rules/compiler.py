"""Compiling a condition's syntax tree once, at load, into a plain Python predicate (no `eval`)
and into the index keys that let the engine test a record against only the rules that can match.

Index keys name something cheap to look up on a record: a code, a code family, a level, a module,
a format, a flag, or a literal that must appear in the text. `And` takes the cheapest key of its
operands, `Or` needs a key on every side, `Not` has none. A rule without keys is tested against
every record, which `rules check` reports.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from npuwatch.records import Record
from npuwatch.rules.condition import And, Comparison, Node, Not, Or
from npuwatch.rules.fields import EXTRACTED_PREFIX, FIELDS, close_matches, resolve_field
from npuwatch.rules.patterns import LinearPattern, PatternError, compile_pattern
from npuwatch.vocabulary import CHATTY_MODULES

Predicate = Callable[[Record], bool]
Extractor = Callable[[Record], dict[str, str]]
IndexKey = tuple[str, Any]

_CODE = re.compile(r"^[EW][0-9A-Z][0-9]{4}$")
_RARE_LEVELS = {
    "ERROR": 10,
    "CRITICAL": 2,
    "EXCEPTION": 2,
    "FATAL": 2,
    "WARNING": 20,
    "EVENT": 30,
    "TRACE": 5,
    "OPLOG": 5,
    "NULL": 5,
}
_KEY_COSTS = {
    "code": 1,
    "runtime": 1,
    "framework": 1,
    "code_prefix": 3,
    "any_code": 5,
    "any_runtime": 5,
    "any_framework": 5,
    "flag": 5,
    "literal": 60,
    "module": 100,
    "kind": 300,
}


class CompileError(ValueError):
    """A condition that parses but cannot work: an unknown field, a bad value or regex."""

    def __init__(self, message: str, loc: int) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass(frozen=True)
class Compiled:
    predicate: Predicate
    keys: frozenset[IndexKey] | None
    """None: the rule must be tested against every record."""
    exact: bool
    """The keys say all the condition says: a record found through them needs no test."""


_EXACT_FIELDS = {
    "log.level",
    "log.logger",
    "ascend.format",
    "ascend.kind",
    "error.code",
    "ascend.error_codes",
    "ascend.runtime_codes",
    "ascend.framework_code",
}


def compile_condition(node: Node, extractor: Extractor | None = None) -> Compiled:
    exact = (
        isinstance(node, Comparison)
        and node.op in ("==", "in")
        and resolve_field(node.field) in _EXACT_FIELDS
    )
    return Compiled(_predicate(node, extractor), _keys(node), exact)


def compile_predicate(node: Node, extractor: Extractor | None = None) -> Predicate:
    """The predicate of a condition alone (`compile_condition` also finds its index keys, which
    parses its patterns again)."""
    return _predicate(node, extractor)


def condition_keys(node: Node) -> frozenset[IndexKey] | None:
    """The index keys of a condition (None: it must be tested against every record)."""
    return _keys(node)


"""Modules that write much of a busy plog; a rule keyed by any other module is cheap."""


def key_cost(keys: Iterable[IndexKey]) -> int:
    total = 0
    for kind, value in keys:
        if kind == "level":
            total += _RARE_LEVELS.get(str(value), 500)
        elif kind == "format":
            total += 1000 if value == "slog" else 2
        elif kind == "module":
            # A chatty module is dearer than a literal: its records are many. Any other module
            # is cheaper: the engine reads every record's module once a batch for all module
            # keys together (the default packs have some), while each literal is a search of
            # the batch's whole text.
            total += 100 if value in CHATTY_MODULES else 50
        else:
            total += _KEY_COSTS.get(kind, 1000)
    return total


# --- predicates -----------------------------------------------------------------------------


def _predicate(node: Node, extractor: Extractor | None) -> Predicate:
    if isinstance(node, And | Or):
        parts = [_predicate(operand, extractor) for operand in node.operands]
        return _all(parts) if isinstance(node, And) else _any(parts)
    if isinstance(node, Not):
        inner = _predicate(node.operand, extractor)
        return lambda record: not inner(record)
    return _comparison(node, extractor)


def _all(parts: list[Predicate]) -> Predicate:
    # Nested closures instead of all(generator): predicates run once per candidate record.
    # Halved, not chained: a condition of 10,000 operands nests 14 calls deep, not 10,000.
    if len(parts) == 1:
        return parts[0]
    first, second = _all(parts[: len(parts) // 2]), _all(parts[len(parts) // 2 :])
    return lambda record: first(record) and second(record)


def _any(parts: list[Predicate]) -> Predicate:
    if len(parts) == 1:
        return parts[0]
    first, second = _any(parts[: len(parts) // 2]), _any(parts[len(parts) // 2 :])
    return lambda record: first(record) or second(record)


def _comparison(node: Comparison, extractor: Extractor | None) -> Predicate:
    exact = _exact_comparison(node, extractor)
    if resolve_field(node.field) == "message" and node.op in ("contains", "startswith", "~"):
        # Deriving a record's message costs more than testing its raw text, which holds the
        # message: test the text first and derive only for the few records that pass.
        if node.op == "~" and re.search(r"^\^|\\A|\$$|\\Z|\(\?[a-z]*m", str(node.values[0])):
            return exact  # anchored: the raw text starts and ends elsewhere
        cheap = _text_probe(node, extractor)
        return lambda record: cheap(record) and exact(record)
    return exact


def _text_probe(node: Comparison, extractor: Extractor | None) -> Predicate:
    """The test of a message comparison on the raw text. A pattern's prefilter looks for its
    words in the record's lowered text, which the record keeps for every rule that asks."""
    if node.op != "~":
        on_text = Comparison("ascend.text", "contains", node.values, node.flags, node.loc)
        return _exact_comparison(on_text, extractor)
    pattern = _pattern(node)
    if not pattern.lowered:
        return lambda record: pattern.search(record.text)
    prefilter, search = pattern.prefilter, pattern.search_unfiltered

    def probe(record: Record) -> bool:
        verdict = prefilter(record.lowered_text)
        return search(record.text) if verdict is None else verdict

    return probe


def _exact_comparison(node: Comparison, extractor: Extractor | None) -> Predicate:
    name = resolve_field(node.field)
    if name is None:
        hint = close_matches(node.field)
        suggestion = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise CompileError(f"unknown field {node.field!r}{suggestion}", node.loc)
    if name.startswith(EXTRACTED_PREFIX):
        if extractor is None:
            raise CompileError(
                f"{node.field} needs an 'extract' pattern with a group named "
                f"{name[len(EXTRACTED_PREFIX) :]!r}",
                node.loc,
            )
        group = name[len(EXTRACTED_PREFIX) :]
        extract = extractor

        def extracted(record: Record) -> Any:
            return _number_or_text(extract(record).get(group))

        getter: Callable[[Record], Any] = extracted
        kind = "any"
    else:
        spec = FIELDS[name]
        getter, kind = spec.getter, spec.kind
    if node.op == "contains" and name in (
        "event.original",
        "ascend.text",
        "ascend.lowered_text",
        "message",
    ):
        # The hot case of a plan (a literal in the raw text): one call instead of three.
        text, read = str(node.values[0]), getter
        return lambda record: text in read(record)
    test = _test(node, name, kind)
    if kind in ("strs", "ints"):
        return lambda record: any(test(value) for value in getter(record))
    return lambda record: test(getter(record))


def _test(node: Comparison, name: str, kind: str) -> Callable[[Any], bool]:
    op, values = node.op, node.values
    numeric = kind in ("int", "ints")
    if op == "exists":
        if kind in ("strs", "ints"):
            return lambda value: True  # any() over the values: true when there is one
        return lambda value: value is not None and value != ""
    if op == "range":
        low, high = (str(v) for v in values)
        if not (_CODE.match(low) and _CODE.match(high)):
            raise CompileError("a range goes from one six-character code to another", node.loc)
        return lambda value: isinstance(value, str) and low <= value <= high
    if op == "~":
        return _regex_test(node)
    checked = tuple(_coerce(value, numeric, name, node) for value in values)
    if op == "in":
        members = frozenset(checked)
        return lambda value: value in members
    (expected,) = checked
    if op in ("contains", "startswith"):
        if numeric:
            raise CompileError(f"'{op}' works on text; {name} holds numbers", node.loc)
        text = str(expected)
        if op == "contains":
            return lambda value: value is not None and text in value
        return lambda value: value is not None and value.startswith(text)
    compare = _COMPARE[op]
    if kind == "any":  # an extracted field: numbers compare as numbers, anything else as text
        return lambda value: value is not None and _safe(compare, value, expected)
    return lambda value: value is not None and compare(value, expected)


def _regex_test(node: Comparison) -> Callable[[Any], bool]:
    search = _pattern(node).search
    return lambda value: value is not None and search(str(value))


def _pattern(node: Comparison) -> LinearPattern:
    try:
        return compile_pattern(str(node.values[0]), node.flags)
    except PatternError as error:
        raise CompileError(f"bad regex /{node.values[0]}/: {error}", node.loc) from None


def _coerce(value: Any, numeric: bool, name: str, node: Comparison) -> Any:
    if numeric:
        if isinstance(value, int | float):
            return value
        raise CompileError(f"{name} holds numbers; {value!r} is not one", node.loc)
    if isinstance(value, int | float) and name in ("error.code", "ascend.error_codes"):
        raise CompileError(
            f"{name} holds six-character codes such as E30009; numeric ACL codes such as "
            f"{value} are in ascend.runtime_codes",
            node.loc,
        )
    return value if isinstance(value, str) or name.startswith(EXTRACTED_PREFIX) else str(value)


def _number_or_text(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def _safe(compare: Callable[[Any, Any], bool], value: Any, expected: Any) -> bool:
    try:
        return compare(value, expected)
    except TypeError:
        return compare(str(value), str(expected))


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


# --- index keys -----------------------------------------------------------------------------


def _keys(node: Node) -> frozenset[IndexKey] | None:
    if isinstance(node, And):
        options = [keys for keys in map(_keys, node.operands) if keys is not None]
        return min(options, key=key_cost) if options else None
    if isinstance(node, Or):
        union: set[IndexKey] = set()
        for operand in node.operands:
            keys = _keys(operand)
            if keys is None:
                return None
            union |= keys
        return frozenset(union)
    if isinstance(node, Not):
        return None
    return _comparison_keys(node)


def _comparison_keys(node: Comparison) -> frozenset[IndexKey] | None:
    name = resolve_field(node.field)
    op, values = node.op, node.values
    if name in ("error.code", "ascend.error_codes"):
        if op in {"==", "in"}:
            return frozenset(("code", str(v)) for v in values)
        if op == "range" and str(values[0])[:2] == str(values[1])[:2]:
            return frozenset({("code_prefix", str(values[0])[:2])})
        if op == "~":
            prefix = re.match(r"\^([EW][0-9A-Z])(?![*?{])", str(values[0]))
            if prefix is not None and not node.flags:
                return frozenset({("code_prefix", prefix[1])})
        if op == "!=":
            return None
        return frozenset({("any_code", None)})
    if name == "ascend.runtime_codes":
        if op in ("==", "in"):
            return frozenset(("runtime", v) for v in values)
        return None if op == "!=" else frozenset({("any_runtime", None)})
    if name == "ascend.framework_code":
        if op in ("==", "in"):
            return frozenset(("framework", str(v)) for v in values)
        return None if op == "!=" else frozenset({("any_framework", None)})
    simple = {
        "log.level": "level",
        "log.logger": "module",
        "ascend.format": "format",
        "ascend.kind": "kind",
    }
    if name in simple and op in ("==", "in"):
        return frozenset((simple[name], str(v)) for v in values)
    if name == "ascend.flags" and op in ("==", "in"):
        return frozenset(("flag", str(v)) for v in values)
    if name in ("message", "event.original"):
        literal = None
        if op in ("contains", "startswith"):
            literal = str(values[0])
        elif op == "~" and "x" not in node.flags:
            literal = required_literal(str(values[0]))
        if literal is not None and len(literal) >= 3:
            # (text, ignore case): a record is found when its raw text holds the text
            return frozenset({("literal", (literal, "i" in node.flags))})
    return None


@functools.lru_cache(maxsize=4096)
def required_literal(pattern: str) -> str | None:
    """The longest run of plain characters that every match of `pattern` must contain."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # noqa: PLC0415
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    best = ""
    run = ""
    for op, argument in parsed:
        name = str(op)
        if name == "LITERAL":
            run += chr(argument)
            continue
        if name == "AT":  # anchors do not break a run
            continue
        best = max(best, run, key=len)
        run = ""
    best = max(best, run, key=len)
    return best or None
