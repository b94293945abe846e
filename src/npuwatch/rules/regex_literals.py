"""What text every match of a pattern must contain: the literal prefilter of rule patterns.

A call into RE2 costs about 0.7 µs whatever the text; `in` on a str costs a tenth of that. Most
rule patterns need one of a few words (`/task run failed|task exception/i` needs "task"), and
most records hold none of them, so a pattern first looks for its words and calls RE2 only when
one is there. Some patterns are nothing but words (`/heartbeat/i`, `/a|b/`): for those the
words decide alone.

Case-insensitive patterns are looked for in lowered text, which is the same test only for ASCII:
their words are ASCII, and a text with other characters goes to RE2 (`str.isascii()` is one flag
read in CPython).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from npuwatch.rules.regex_syntax import Tree

_MOST_STRINGS = 16
"""Sets of more alternative strings are not worth a Python loop per record."""
_SMALL_SET = 8
"""A set of at most this many characters ([ds], [5-9]) is expanded into strings."""


@dataclass(frozen=True)
class Literals:
    """What every match contains, for a prefilter."""

    needles: tuple[str, ...]
    """A match contains at least one of these (lowered when `lowered`)."""
    lowered: bool
    """The needles are to be found in lowered text (the pattern ignores case somewhere)."""
    decisive: bool
    """The pattern matches exactly where a needle is found: it is only these strings."""


@dataclass(frozen=True)
class _Facts:
    exact: frozenset[str] | None
    """Every string this part can match, when they are few and plain."""
    needed: frozenset[str] | None
    """Some string of this set is in every match of this part."""


_NOTHING_KNOWN = _Facts(None, None)


def literals_of(tree: Tree) -> Literals | None:
    """The prefilter of a parsed pattern (regex_syntax.parse), or None when it has none."""
    lowered = _ignores_case(tree, tree.state.flags)
    facts = _sequence(tree, lowered)
    needed = facts.exact if facts.exact is not None else facts.needed
    if not needed or "" in needed:
        return None
    decisive = facts.exact is not None and not _has_anchor(tree) and not _case_changes_inside(tree)
    return Literals(tuple(sorted(_minimal(needed))), lowered, decisive)


def _sequence(items: Tree, lowered: bool) -> _Facts:
    """Facts of a concatenation: runs of exact parts multiply out; the best run or part that
    every match needs is kept."""
    candidates: list[frozenset[str]] = []
    run = frozenset({""})
    whole_exact = True
    for op, argument in items:
        part = _item(str(op), argument, lowered)
        if part.exact is not None:
            product = frozenset(a + b for a in run for b in part.exact)
            if len(product) <= _MOST_STRINGS:
                run = product
                continue
            candidates.append(run)
            run = part.exact
        else:
            candidates.append(run)
            if part.needed is not None:
                candidates.append(part.needed)
            run = frozenset({""})
        whole_exact = False
    candidates.append(run)
    exact = run if whole_exact else None
    useful = [c for c in candidates if c and "" not in c]
    needed = max(useful, key=_strength) if useful else None
    return _Facts(exact, needed)


def _item(op: str, argument: Any, lowered: bool) -> _Facts:
    if op == "LITERAL":
        character = chr(argument)
        if lowered:
            if not character.isascii():
                return _NOTHING_KNOWN  # its case folds may be ASCII letters (K, ſ)
            character = character.lower()
        return _Facts(frozenset({character}), None)
    if op == "AT":
        return _Facts(frozenset({""}), None)
    if op == "IN":
        return _set(argument, lowered)
    if op == "SUBPATTERN":
        return _sequence(argument[-1], lowered)
    if op == "BRANCH":
        return _branch(argument[1], lowered)
    if op in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, body = argument
        inner = _sequence(body, lowered)
        if low == 0:
            if high == 1 and inner.exact is not None:
                return _Facts(inner.exact | {""}, None)
            return _NOTHING_KNOWN
        needed = inner.exact if inner.exact is not None else inner.needed
        if low == high == 1:
            return inner
        return _Facts(None, needed)
    return _NOTHING_KNOWN


def _branch(alternatives: list[Tree], lowered: bool) -> _Facts:
    facts = [_sequence(alternative, lowered) for alternative in alternatives]
    exact: frozenset[str] | None = None
    if all(f.exact is not None for f in facts):
        union = frozenset().union(*(f.exact for f in facts if f.exact is not None))
        exact = union if len(union) <= _MOST_STRINGS else None
    needed: set[str] = set()
    for fact in facts:
        own = fact.exact if fact.exact is not None else fact.needed
        if not own or "" in own:
            return _Facts(exact, None)
        needed |= own
    return _Facts(exact, frozenset(needed) if len(needed) <= _MOST_STRINGS else None)


def _set(members: Any, lowered: bool) -> _Facts:
    characters: set[str] = set()
    for op, argument in members:
        kind = str(op)
        if kind == "LITERAL":
            characters.add(chr(argument))
        elif kind == "RANGE" and argument[1] - argument[0] < _SMALL_SET:
            characters.update(chr(code) for code in range(argument[0], argument[1] + 1))
        else:
            return _NOTHING_KNOWN
        if len(characters) > _SMALL_SET:
            return _NOTHING_KNOWN
    if lowered:
        if not all(character.isascii() for character in characters):
            return _NOTHING_KNOWN
        characters = {character.lower() for character in characters}
    return _Facts(frozenset(characters), None)


def _strength(strings: frozenset[str]) -> tuple[int, int]:
    """Longer shortest string first, then fewer strings: the rarer to find in a text."""
    return (min(map(len, strings)), -len(strings))


def _minimal(strings: frozenset[str]) -> set[str]:
    """Without the strings that hold another one (finding the shorter finds them)."""
    return {s for s in strings if not any(t != s and t in s for t in strings)}


def _ignores_case(items: Tree, flags: int) -> bool:
    if flags & re.IGNORECASE:
        return True
    for op, argument in items:
        name = str(op)
        if name == "SUBPATTERN":
            if _ignores_case(argument[-1], flags | argument[1]):
                return True
        elif name == "BRANCH":
            if any(_ignores_case(alternative, flags) for alternative in argument[1]):
                return True
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and _ignores_case(argument[-1], flags):
            return True
    return False


def _case_changes_inside(items: Tree) -> bool:
    """Whether a group turns case-insensitivity on or off for a part (`a(?i:b)`): lowered text
    then tells whether the words are there, not whether the pattern matches."""
    for op, argument in items:
        name = str(op)
        if name == "SUBPATTERN":
            if (argument[1] | argument[2]) & re.IGNORECASE or _case_changes_inside(argument[-1]):
                return True
        elif name == "BRANCH":
            if any(_case_changes_inside(alternative) for alternative in argument[1]):
                return True
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and _case_changes_inside(argument[-1]):
            return True
    return False


def _has_anchor(items: Tree) -> bool:
    for op, argument in items:
        name = str(op)
        if name == "AT":
            return True
        if name == "SUBPATTERN" and _has_anchor(argument[-1]):
            return True
        if name == "BRANCH" and any(_has_anchor(a) for a in argument[1]):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT") and _has_anchor(argument[-1]):
            return True
    return False
