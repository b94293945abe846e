"""A rule pattern, written in Python's regular-expression syntax, rewritten for RE2.

Rule packs have always been written for Python's `re`, and their patterns keep that meaning:
Python's own parser reads the pattern (its errors are the ones users know), and the syntax tree
is written out again in RE2's syntax, construct by construct, so that what differs between the
two engines is decided here and not left to chance:

- `\\d`, `\\w` and `\\s` keep Python's Unicode meaning (RE2's are ASCII), and their ASCII one
  under `(?a)`; flags `i`, `m`, `s` (global or scoped) map to RE2's; `x` is Python's parser's;
- `$` without `m` also matches before a newline that ends the text, as in Python (RE2 takes it
  with the newline); `\\Z` is RE2's `\\z`;
- what only a backtracking engine can do is refused, with what it is: backreferences,
  lookahead and lookbehind, conditional groups, atomic groups and possessive repeats.

Left as RE2 has it: `\\b` and `\\B` see ASCII letters, digits and `_` as word characters (RE2
has no Unicode word boundary), and repeat counts above 1000 are refused (RE2's limit).
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11 and later
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse

Tree = Any
"""Python's parsed pattern (`re._parser.SubPattern`): a list of (opcode, argument)."""


class UnsupportedPattern(ValueError):
    """A pattern that is valid for Python but needs what RE2 cannot do; the message says what."""


_REFUSED = {
    "GROUPREF": "a backreference (\\1, (?P=name))",
    "GROUPREF_EXISTS": "a conditional group (?(1)...)",
    "ATOMIC_GROUP": "an atomic group (?>...)",
    "POSSESSIVE_REPEAT": "a possessive repeat (*+, ++, ?+)",
}

# Python's Unicode \s (str.isspace), as ranges of code points; a test holds it to Python's.
_SPACE_RANGES = (
    (0x9, 0xD),
    (0x1C, 0x20),
    (0x85, 0x85),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
)
_ASCII_SPACE_RANGES = ((0x9, 0xD), (0x20, 0x20))
_LAST_CODE_POINT = 0x10FFFF
_UNICODE_WORD = r"\p{L}\p{N}_"
_ASCII_WORD = "0-9A-Za-z_"
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def parse(pattern: str, flags: int = 0) -> Tree:
    """Python's syntax tree of `pattern` (re.error when Python would not compile it)."""
    return sre_parse.parse(pattern, flags)


def to_re2(tree: Tree) -> str:
    """The RE2 pattern that matches what Python's `tree` matches (UnsupportedPattern when RE2
    cannot)."""
    flags = tree.state.flags
    names = {number: name for name, number in tree.state.groupdict.items()}
    writer = _Writer(names)
    body = writer.sequence(tree, flags)
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)
    return f"(?{letters}){body}" if letters else body


class _Writer:
    def __init__(self, names: dict[int, str]) -> None:
        self._names = names

    def sequence(self, items: Tree, flags: int) -> str:
        return "".join(self.item(str(op), argument, flags) for op, argument in items)

    def item(self, op: str, argument: Any, flags: int) -> str:
        if op == "LITERAL":
            return _char(argument)
        if op == "NOT_LITERAL":
            return f"[^{_char(argument)}]"
        if op == "ANY":
            return "."
        if op == "IN":
            return _char_class(argument, flags)
        if op == "CATEGORY":
            return _category(str(argument), flags)
        if op == "AT":
            return _anchor(str(argument), flags)
        if op == "BRANCH":
            _, alternatives = argument
            return "(?:" + "|".join(self.sequence(a, flags) for a in alternatives) + ")"
        if op == "SUBPATTERN":
            return self._group(argument, flags)
        if op in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, body = argument
            lazy = "?" if op == "MIN_REPEAT" else ""
            return f"(?:{self.sequence(body, flags)}){_count(low, high)}{lazy}"
        if op in ("ASSERT", "ASSERT_NOT"):
            direction, _ = argument
            kind = "lookahead" if direction == 1 else "lookbehind"
            negative = "negative " if op == "ASSERT_NOT" else ""
            raise UnsupportedPattern(f"a {negative}{kind} needs a backtracking engine")
        if op in _REFUSED:
            raise UnsupportedPattern(f"{_REFUSED[op]} needs a backtracking engine")
        raise UnsupportedPattern(f"{op.lower()} is not supported")  # pragma: no cover

    def _group(self, argument: Any, flags: int) -> str:
        number, added, removed, body = argument
        inner = (flags | added) & ~removed
        on = "".join(letter for flag, letter in _FLAG_LETTERS if added & flag)
        off = "".join(letter for flag, letter in _FLAG_LETTERS if removed & flag)
        text = self.sequence(body, inner)
        if on or off:
            text = f"(?{on}{'-' + off if off else ''}:{text})"
        if number is None:
            return f"(?:{text})"
        name = self._names.get(number)
        return f"(?P<{name}>{text})" if name is not None else f"({text})"


def _char(code: int) -> str:
    character = chr(code)
    if character.isascii() and character.isalnum():
        return character
    return f"\\x{{{code:x}}}"


def _count(low: int, high: int) -> str:
    unbounded = high == sre_parse.MAXREPEAT
    if (low, unbounded) == (0, True):
        return "*"
    if (low, unbounded) == (1, True):
        return "+"
    if unbounded:
        return f"{{{low},}}"
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _anchor(name: str, flags: int) -> str:
    if name == "AT_BEGINNING":
        return "^"
    if name == "AT_BEGINNING_STRING":
        return r"\A"
    if name == "AT_END":
        # Python's `$` also matches before a last newline; RE2's only at the very end.
        return "$" if flags & re.MULTILINE else r"(?:\n?\z)"
    if name == "AT_END_STRING":
        return r"\z"
    if name == "AT_BOUNDARY":
        return r"\b"
    if name == "AT_NON_BOUNDARY":
        return r"\B"
    raise UnsupportedPattern(f"the anchor {name} is not supported")  # pragma: no cover


def _category(name: str, flags: int) -> str:
    """A category (\\d \\D \\w \\W \\s \\S) on its own, outside a set."""
    positive = _category_items(name.replace("NOT_", ""), flags)
    return f"[^{positive}]" if "NOT_" in name else f"[{positive}]"


def _category_items(name: str, flags: int) -> str:
    """The members of a positive category, written to go inside [...]."""
    ascii_only = bool(flags & re.ASCII)
    if name == "CATEGORY_DIGIT":
        return "0-9" if ascii_only else r"\p{Nd}"
    if name == "CATEGORY_WORD":
        return _ASCII_WORD if ascii_only else _UNICODE_WORD
    if name == "CATEGORY_SPACE":
        ranges = _ASCII_SPACE_RANGES if ascii_only else _SPACE_RANGES
        return "".join(_span(low, high) for low, high in ranges)
    raise UnsupportedPattern(f"the class {name} is not supported")  # pragma: no cover


def _complement_items(name: str, flags: int) -> str | None:
    """A negated category written to go inside [...], or None when RE2 cannot (\\W)."""
    ascii_only = bool(flags & re.ASCII)
    if name == "CATEGORY_NOT_DIGIT":
        return r"\P{Nd}" if not ascii_only else r"\D"
    if name == "CATEGORY_NOT_SPACE":  # RE2's \S would take \v, which is space to Python
        gaps, start = [], 0
        for low, high in _ASCII_SPACE_RANGES if ascii_only else _SPACE_RANGES:
            if low > start:
                gaps.append(_span(start, low - 1))
            start = high + 1
        gaps.append(_span(start, _LAST_CODE_POINT))
        return "".join(gaps)
    if name == "CATEGORY_NOT_WORD" and ascii_only:
        return r"\W"
    return None


def _span(low: int, high: int) -> str:
    return _char(low) if low == high else f"{_char(low)}-{_char(high)}"


def _char_class(members: Tree, flags: int) -> str:
    negated = False
    items: list[str] = []
    not_word = False
    """Unicode \\W, which RE2 cannot put inside a set: written around it."""
    for op, argument in members:
        kind = str(op)
        if kind == "NEGATE":
            negated = True
        elif kind == "LITERAL":
            items.append(_char(argument))
        elif kind == "RANGE":
            items.append(_span(*argument))
        elif kind == "CATEGORY":
            name = str(argument)
            if "NOT_" not in name:
                items.append(_category_items(name, flags))
                continue
            complement = _complement_items(name, flags)
            if complement is not None:
                items.append(complement)
            else:
                not_word = True
        else:  # pragma: no cover - Python's parser puts nothing else in a set
            raise UnsupportedPattern(f"{kind.lower()} in a set is not supported")
    if not not_word:
        return f"[{'^' if negated else ''}{''.join(items)}]"
    if negated:
        return _word_except(items)
    return "(?:" + "|".join(([f"[{''.join(items)}]"] if items else []) + [r"[^\p{L}\p{N}_]"]) + ")"


def _word_except(items: list[str]) -> str:
    """`[^\\W...]`: word characters but those listed, for the idioms `[^\\W\\d]` (letters and
    `_`), `[^\\W_]` and `[^\\W\\d_]` (letters); other lists RE2 cannot write."""
    others = set(items)
    unknown = others - {r"\p{Nd}", _char(ord("_"))}
    if unknown:
        raise UnsupportedPattern(
            "a negated set holding \\W and other members cannot be written for RE2: list the "
            "characters it should match instead"
        )
    numbers = r"\p{Nl}\p{No}" if r"\p{Nd}" in others else r"\p{N}"
    underscore = "" if _char(ord("_")) in others else "_"
    return rf"[\p{{L}}{numbers}{underscore}]"
