"""The words a rule's text tests need, found for a whole batch in one search.

Most rules that a record's level or module brings to it still test its text: `log.level == ERROR
and message ~ /task run failed|task exception/i` is true only of a record whose text holds one of
the pattern's words (regex_literals.py), and nearly no ERROR record holds them. Testing each rule
on each such record, one call per rule and record, was most of the rules' time. Instead the engine
joins the texts of the records that have such tests and searches them once, in RE2, for the words
of every rule at once; the few records where a word is found are asked, in one call to an RE2 set,
which comparisons' words they hold (as the bits of an int, a bit per comparison's words), and a
test runs only on a record that holds words it needs.

The search may find more than a test needs (a word across two joined texts), never less: a test
is passed over only when the record holds none of the words it needs. So every word here is one
that must be there for its comparison to be true:

- `message` and `ascend.text` are looked for in `Record.text`, which holds the message (the body
  the message is cut from, with the continuation lines; or the message itself);
- `event.original` in `Record.original`;
- case-insensitive words in RE2's case-insensitive mode, which folds what Python's `str.lower`
  folds for the patterns' ASCII words (K and the Kelvin sign alike), and what RE2 itself folds
  when it matches the whole pattern;
- texts are encoded as the patterns encode them for RE2 (a lone surrogate becomes U+FFFD).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, count
from operator import add

import re2  # type: ignore[import-untyped]

from npuwatch.rules.condition import And, Comparison, Node, Not
from npuwatch.rules.fields import resolve_field
from npuwatch.rules.patterns import PatternError, compile_pattern, utf8

TEXT = 1
"""Words looked for in the record's `text` (`message`, `ascend.text`)."""
ORIGINAL = 2
"""Words looked for in the record's `original` (`event.original`)."""

_PLACES = {"message": TEXT, "ascend.text": TEXT, "event.original": ORIGINAL}

Word = tuple[str, bool]
"""A word and whether its case is ignored (then it is lowered)."""
Group = tuple[int, frozenset[Word]]
"""Where a comparison looks and its words, one of which must be there for it to be true."""


def comparison_words(node: Comparison) -> Group | None:
    """Where a comparison looks and its words; None when it needs no word (another field,
    another operator, a pattern without words)."""
    place = _PLACES.get(resolve_field(node.field) or "")
    if place is None:
        return None
    if node.op in ("contains", "startswith"):
        word = str(node.values[0])
        return (place, frozenset({(word, False)})) if word else None
    if node.op == "~":
        try:
            literals = compile_pattern(str(node.values[0]), node.flags).literals
        except PatternError:  # pragma: no cover - the rule would not have compiled
            return None
        if literals is None:
            return None
        return place, frozenset((needle, literals.lowered) for needle in literals.needles)
    return None


class WordSearch:
    """The words of every rule's comparisons: one RE2 program per place that finds any of them,
    and one RE2 set per place that tells which comparisons' words a text holds."""

    def __init__(self, conditions: Iterable[Node]) -> None:
        self._ids: dict[Group, int] = {}
        for node in conditions:
            for comparison in _comparisons(node):
                group = comparison_words(comparison)
                if group is not None and group not in self._ids:
                    self._ids[group] = len(self._ids)
        self.places: list[int] = [place for place, _ in self._ids]
        """The place of each group, by id (its bit: `1 << id`)."""
        self._search: dict[int, Callable[[bytes, int, int], int] | None] = {}
        self._sets: dict[int, Callable[[bytes], int]] = {}
        for place in (TEXT, ORIGINAL):
            groups = [(group, id_) for group, id_ in self._ids.items() if group[0] == place]
            words = {word for (_, group_words), _ in groups for word in group_words}
            self._search[place] = _program(words)
            self._sets[place] = _group_set(groups)

    def needed(self, node: Node) -> int | None:
        """The bits of the groups one of which a record must hold for the condition to be true;
        None when it can be true without any word."""
        if isinstance(node, Comparison):
            group = comparison_words(node)
            return None if group is None else 1 << self._ids[group]
        if isinstance(node, Not):
            return None  # `not message contains x` holds on every text without x
        if isinstance(node, And):
            # Every operand must be true: the words of any one of them are needed.
            return next((found for found in map(self.needed, node.operands) if found), None)
        union = 0
        for operand in node.operands:  # Or: one operand is true, and needs its own words
            found = self.needed(operand)
            if found is None:
                return None
            union |= found
        return union

    def holders(self, place: int, texts: Sequence[str]) -> list[int]:
        """The indexes of `texts` that hold a word of `place` (or may: see above), in order."""
        search = self._search[place]
        if search is None:  # no rule has words there, and none asks
            return list(range(len(texts)))
        if not texts:
            return []
        joined = "\n".join(texts)
        if joined.isascii():
            data = joined.encode("ascii")
            lengths: Iterable[int] = map(len, texts)
        else:
            encoded = list(map(utf8, texts))
            data = b"\n".join(encoded)
            lengths = map(len, encoded)
        # Where each text ends in `data`: its length, the lengths before it and one byte for
        # each separator before it.
        ends = list(map(add, accumulate(lengths), count()))
        found: list[int] = []
        position, size = 0, len(data)
        while position <= size:
            start = search(data, position, size)
            if start < 0:
                break
            index = bisect_left(ends, start)  # the text the match starts in (or just after)
            found.append(index)
            position = ends[index] + 1  # the next text: one answer per text is enough
        return found

    def groups_in(self, place: int, text: str) -> int:
        """The bits of the groups of `place` whose words `text` holds (all of them when RE2
        cannot say)."""
        return self._sets[place](utf8(text))


def _comparisons(node: Node) -> Iterable[Comparison]:
    if isinstance(node, Comparison):
        yield node
    elif isinstance(node, Not):
        yield from _comparisons(node.operand)
    else:
        for operand in node.operands:
            yield from _comparisons(operand)


def _pattern(words: Iterable[Word]) -> str:
    """Any of `words`, as RE2 reads it."""
    alternatives = (
        f"(?i:{_escaped(word)})" if ignore_case else _escaped(word) for word, ignore_case in words
    )
    return "|".join(sorted(alternatives))


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


def _program(words: set[Word]) -> Callable[[bytes, int, int], int] | None:
    """A search for any of `words` from a position up to an end, that answers where the first
    match starts (-1: none); None when there are no words."""
    if not words:
        return None
    try:
        compiled = re2.compile(_pattern(words), _options())
    except re2.error:  # too many words for RE2's memory: every text is said to hold one
        return _everywhere
    regexp = getattr(compiled, "_regexp", None)
    match = getattr(regexp, "Match", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if match is None or anchor is None:  # pragma: no cover - another google-re2
        on_bytes = re2.compile(_pattern(words).encode(), _options())

        def slow(data: bytes, position: int, end: int) -> int:
            found = on_bytes.search(data, position, end)
            return -1 if found is None else int(found.start())

        return slow

    def search(data: bytes, position: int, end: int) -> int:
        return int(match(anchor, data, position, end)[0][0])

    return search


def _group_set(groups: list[tuple[Group, int]]) -> Callable[[bytes], int]:
    """Which of `groups` (with their ids) a text holds words of, as bits, in one call to an RE2
    set."""
    every = sum(1 << id_ for _, id_ in groups)
    if not groups:
        return lambda data: every
    try:
        found = re2.Set.SearchSet(_options())
        bits = []
        for (_, words), id_ in groups:
            found.Add(_pattern(words))
            bits.append(1 << id_)
        found.Compile()
    except re2.error:  # too many words for RE2's memory: every group is said to be there
        return lambda data: every
    # The compiled set's own `Match` (google-re2's wrapper checks the type of its argument).
    match = getattr(getattr(found, "_set", None), "Match", found.Match)

    def groups_in(data: bytes) -> int:
        held = 0
        for index in match(data) or ():
            held |= bits[index]
        return held

    return groups_in


def _everywhere(data: bytes, position: int, end: int) -> int:
    return position


def _escaped(word: str) -> str:
    """A word as an RE2 literal: letters and digits as they are, anything else as `\\x{…}`."""
    return "".join(
        character if character.isascii() and character.isalnum() else f"\\x{{{ord(character):x}}}"
        for character in word
    )
