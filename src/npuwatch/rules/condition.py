"""A rule condition's syntax tree: comparisons joined by `not`, `and` and `or`.

rules/grammar.py parses a condition's text into it (with pyparsing), rules/compiler.py compiles
it; rules/rule_cache.py keeps it between runs, so that a command whose rules come from the cache
never loads the grammar. Every node keeps the offset of its text, for error messages.
"""

from __future__ import annotations

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
