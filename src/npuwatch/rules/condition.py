"""A rule condition's syntax tree: comparisons joined by `not`, `and` and `or`.

rules/grammar.py parses a condition's text into it (with pyparsing), rules/compiler.py compiles
it; rules/rule_cache.py keeps it between runs, so that a command whose rules come from the cache
never loads the grammar. Every node keeps the offset of its text, for error messages.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

Value = str | int | float

MAX_NESTING = 32
"""Parentheses and `not`s nested deeper than this in a condition's text are refused before it is
parsed (rules/grammar.py): pyparsing recurses about 14 frames a level, and no pack may reach the
interpreter's recursion limit."""
MAX_TREE_DEPTH = 3 * MAX_NESTING + 2
"""No tree the grammar makes of an accepted condition is deeper (each level of parentheses adds
at most an `or` and an `and`); the cache refuses deeper ones (rules/rule_cache_format.py)."""


@dataclass(frozen=True)
class Comparison:
    field: str
    op: str
    """One of == != < <= > >= in range ~ contains startswith exists."""
    values: tuple[Value, ...]
    flags: str
    """Regex flags (`i`, `m`, `s`, `x`) for `~`."""
    loc: int


@dataclass(frozen=True)
class Not:
    operand: Node
    loc: int


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]
    loc: int


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]
    loc: int


Node = Comparison | Not | And | Or


def settle(node: Node, compare: Callable[[Comparison], Node | bool]) -> Node | bool:
    """What is left of a condition once `compare` has decided the comparisons it can: True,
    False, or the rest to test (`compare` gives a comparison it cannot decide back as it is;
    a node of which nothing was decided is given back itself)."""
    if isinstance(node, Comparison):
        return compare(node)
    if isinstance(node, Not):
        inner = settle(node.operand, compare)
        if isinstance(inner, bool):
            return not inner
        return node if inner is node.operand else Not(inner, node.loc)
    is_and = isinstance(node, And)
    parts: list[Node] = []
    for operand in node.operands:
        part = settle(operand, compare)
        if part is (not is_and):  # False in an And, True in an Or decides it
            return part
        if not isinstance(part, bool):
            parts.append(part)
    if not parts:
        return is_and
    if len(parts) == 1:
        return parts[0]
    if len(parts) == len(node.operands) and all(map(operator.is_, parts, node.operands)):
        return node
    return And(tuple(parts), node.loc) if is_and else Or(tuple(parts), node.loc)
