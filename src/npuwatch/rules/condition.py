"""A rule condition's syntax tree: comparisons joined by `not`, `and` and `or`.

rules/grammar.py parses a condition's text into it (with pyparsing), rules/compiler.py compiles
it; rules/rule_cache.py keeps it between runs, so that a command whose rules come from the cache
never loads the grammar. Every node keeps the offset of its text, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass

Value = str | int | float


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
