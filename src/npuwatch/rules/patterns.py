"""The regular expressions of rule packs, run in RE2: linear in the text, whatever the pattern.

A pattern in a pack (`message ~ /.../`, `extract:`, a FaultDiag import) is written by whoever
can write a pack, and runs on every line the agent reads, including lines whoever can write a
log chose. In a backtracking engine (Python's `re`) a pattern such as `(a+)+$` and a line of
thirty a's take minutes, holding the interpreter's lock: nothing is journaled from any file and
SIGTERM is not even seen. RE2 (google-re2) takes time linear in the text for every pattern it
accepts, and lets other threads run meanwhile; what it cannot run (backreferences, lookaround)
is refused when the pack loads, with the reason (regex_syntax.py keeps Python's meaning).

Each pattern looks for the words every match must hold before it calls RE2
(regex_literals.py): most records hold none, and `in` costs a tenth of a call into RE2.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import re2  # type: ignore[import-untyped]

from npuwatch.rules import regex_syntax
from npuwatch.rules.regex_literals import Literals, literals_of

MAX_GROUP_NESTING = 50
"""Groups nested deeper than this are refused: Python's own parser of patterns recurses into
each group, and no pack may reach the interpreter's recursion limit."""

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


class PatternError(ValueError):
    """A pattern that cannot run: Python's syntax error, or what RE2 cannot do; one line."""


class LinearPattern:
    """A rule pattern compiled for RE2, with its literal prefilter."""

    __slots__ = (
        "_literals",
        "_re2",
        "_search_bytes",
        "flags",
        "groupindex",
        "source",
        "translated",
    )

    def __init__(self, parts: PatternParts) -> None:
        """Compile what `translate` (or the rule cache) gave; PatternError when RE2 refuses."""
        self.source, self.flags = parts.source, parts.flags
        self.translated = parts.translated
        options = re2.Options()
        options.log_errors = False  # RE2 would print its errors on stderr too
        try:
            self._re2 = re2.compile(parts.translated, options)
        except re2.error as error:
            reason = error.args[0] if error.args else error
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise PatternError(f"RE2 cannot run it: {reason}") from None
        self.groupindex: dict[str, int] = dict(self._re2.groupindex)
        self._literals: Literals | None = parts.literals
        self._search_bytes = _byte_search(self._re2)

    @property
    def parts(self) -> PatternParts:
        """What the pattern is made of, for the rule cache to keep."""
        return PatternParts(self.source, self.flags, self.translated, self._literals)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LinearPattern):
            return NotImplemented
        return (self.source, self.flags) == (other.source, other.flags)

    def __hash__(self) -> int:
        return hash((self.source, self.flags))

    def __repr__(self) -> str:
        return f"LinearPattern(/{self.source}/{self.flags})"

    @property
    def literals(self) -> Literals | None:
        """The words every match holds, when the pattern has some (the rule engine looks for
        them in a whole batch at once: rules/word_search.py)."""
        return self._literals

    @property
    def lowered(self) -> bool:
        """Whether the prefilter looks in lowered text (a record keeps its lowered text)."""
        return self._literals is not None and self._literals.lowered

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in `text` (Python's `re.search`)."""
        literals = self._literals
        if literals is not None:
            verdict = self.prefilter(text.lower() if literals.lowered else text)
            if verdict is not None:
                return verdict
        return self._search_bytes(utf8(text))

    def prefilter(self, hay: str) -> bool | None:
        """What the words alone say of a text (`hay`: the text, lowered when `lowered`): False,
        True, or None when RE2 must say. Lowered text that is all ASCII came from text whose
        letters fold as they lower (ASCII, and K for the Kelvin sign); other text goes to RE2."""
        literals = self._literals
        if literals is None or (literals.lowered and not hay.isascii()):
            return None
        for needle in literals.needles:
            if needle in hay:
                return True if literals.decisive else None
        return False

    def search_unfiltered(self, text: str) -> bool:
        """`search(text)` once the prefilter said None."""
        return self._search_bytes(utf8(text))

    def named_groups(self, text: str) -> dict[str, str] | None:
        """The named groups that took part in the first match (None: no match)."""
        if not self.search(text):
            return None
        encodable = text if _encodable(text) else _replace_surrogates(text)
        match = self._re2.search(encodable)
        if match is None:  # pragma: no cover - search() said it matches
            return None
        return {name: value for name, value in match.groupdict().items() if value is not None}


@dataclass(frozen=True)
class PatternParts:
    """A pattern as Python wrote it, as RE2 reads it, and its prefilter."""

    source: str
    flags: str
    translated: str
    literals: Literals | None


def translate(source: str, flags: str = "") -> PatternParts:
    """Read a pattern with Python's parser and write it for RE2 (PatternError with the reason)."""
    tree = _parse(source, flags)
    try:
        translated = regex_syntax.to_re2(tree)
    except regex_syntax.UnsupportedPattern as error:
        raise PatternError(f"{error} (rule patterns run in RE2, in linear time)") from None
    return PatternParts(source, flags, translated, literals_of(tree))


@functools.lru_cache(maxsize=4096)
def compile_pattern(source: str, flags: str = "") -> LinearPattern:
    """The pattern compiled, from a cache as `re.compile` has one: the rule index compiles each
    rule again for every plan it is part of. Raises PatternError with the reason, in one line."""
    restored = _restored.get((source, flags))
    return restored if restored is not None else LinearPattern(translate(source, flags))


_restored: dict[tuple[str, str], LinearPattern] = {}
"""Patterns the rule cache gave back whole (translating 44 patterns is 20 ms of a command's
start); looked up before translating. Process-wide, as compile_pattern's own cache is."""


def restore_patterns(parts: Iterable[PatternParts]) -> None:
    """Take patterns as the rule cache kept them (`LinearPattern.parts`); PatternError when RE2
    refuses one (a damaged cache)."""
    for part in parts:
        if len(_restored) >= 4096:
            _restored.clear()
        _restored[(part.source, part.flags)] = LinearPattern(part)


def _parse(source: str, flags: str) -> regex_syntax.Tree:
    depth = _group_nesting(source)
    if depth > MAX_GROUP_NESTING:
        raise PatternError(f"groups nested deeper than {MAX_GROUP_NESTING}")
    bits = 0
    for letter in flags:
        bits |= _FLAGS[letter]
    try:
        with warnings.catch_warnings():
            # "Possible nested set" and the like: about future Pythons, not this pattern.
            warnings.simplefilter("ignore", FutureWarning)
            return regex_syntax.parse(source, bits)
    except re.error as error:
        raise PatternError(str(error)) from None


def _group_nesting(source: str) -> int:
    """How deep groups nest in `source`, counted as Python's parser would recurse, or deeper:
    escapes and sets are skipped; `#` comments are counted both as comments and as text, so
    that the count holds with the `x` flag and without."""
    return max(_nesting(source, comments=False), _nesting(source, comments=True))


def _nesting(source: str, comments: bool) -> int:
    depth = deepest = 0
    position, end = 0, len(source)
    while position < end:
        character = source[position]
        if character == "\\":
            position += 2
            continue
        if character == "[":
            position = _after_set(source, position + 1)
            continue
        if comments and character == "#":
            newline = source.find("\n", position)
            position = end if newline < 0 else newline + 1
            continue
        if character == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif character == ")":
            depth = max(depth - 1, 0)
        position += 1
    return deepest


def _after_set(source: str, position: int) -> int:
    """The position after the `]` that closes a set opened just before `position`."""
    if source.startswith("^", position):
        position += 1
    if source.startswith("]", position):
        position += 1  # a `]` first in a set is a member
    while position < len(source):
        if source[position] == "\\":
            position += 2
        elif source[position] == "]":
            return position + 1
        else:
            position += 1
    return position


def utf8(text: str) -> bytes:
    """`text` as RE2 reads it: UTF-8, a lone surrogate (from JSON's \\ud800) as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from JSON's \ud800): RE2 sees U+FFFD
        return _replace_surrogates(text).encode("utf-8")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _replace_surrogates(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _byte_search(compiled: re2._Regexp) -> Callable[[bytes], bool]:
    """Whether the pattern matches in UTF-8 bytes. google-re2's own `search` builds a match
    object through a generator (about 2 µs); its compiled RE2's `Match` answers in 0.7 µs, so
    it is used when this version of google-re2 has it (tests/rules check that it does)."""
    regexp = getattr(compiled, "_regexp", None)
    match = getattr(regexp, "Match", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if match is None or anchor is None:  # pragma: no cover - another google-re2
        return lambda data: compiled.search(data.decode("utf-8")) is not None

    def search(data: bytes) -> bool:
        return bool(match(anchor, data, 0, len(data))[0][0] >= 0)

    return search


def fast_path_in_use(pattern: LinearPattern) -> bool:
    """Whether `pattern` calls RE2's `Match` directly (for the tests)."""
    return "<lambda>" not in pattern._search_bytes.__qualname__
