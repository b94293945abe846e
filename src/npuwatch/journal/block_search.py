"""Finding the records of a block that a `grep` pattern may match, building no other record.

The pattern is searched in the block's whole text (every record's text joined by newlines) at
C speed, and only the records where a match starts are built; the caller tests each of them on
its own text (a match running across records is no match).

Most patterns hold a literal that every match contains: the whole pattern for a plain phrase,
`Task run failed, device_id=` for `Task run failed, device_id=\\d+`. Such a literal does two
things, both measured on bench/anchors.py's real-format journal (1M lines, 73 blocks):
- a block whose uncompressed bytes lack it is passed over before its columns and text are
  decoded (UTF-8 is self-synchronising: the literal's bytes occur exactly where it occurs in
  the text);
- in a decoded text it is found with `str.find`, which on text holding non-ASCII characters
  (half the blocks: CANN writes Chinese) took 0.023 s where the regular expression took 0.13 s
  over the same 120 MB. The records holding the literal are then tested with the pattern
  over their own span of the text, in C, before one is built.
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from npuwatch.journal.block import BlockColumns, columns_of, text_start
from npuwatch.journal.rows import StoredRecord

_CONTEXT_SENSITIVE = ("\\A", "\\Z", "(?<!", "(?!")
"""Constructs that can match a record alone but not the same record inside the block's text
(a negative look at the neighbouring character, the start or end of the whole string)."""

_SHORTEST_USEFUL_LITERAL = 4
"""A shorter literal inside a larger pattern is found in most records: searching for it would
only add a step before the pattern's own search."""


@dataclass(frozen=True)
class BlockSearch:
    """How one pattern is searched in every block of a question."""

    in_text: re.Pattern[str] | None
    """The pattern to search in a block's joined text, or None when that could miss a record
    (see block_prefilter): then every record holding `literal`, or every record, is built."""
    literal: str | None
    """Text every match contains, or None when the pattern holds none worth searching for."""
    exact: bool
    """Whether finding `literal` is finding the pattern (a pattern that is only a literal)."""

    @classmethod
    def of(cls, pattern: re.Pattern[str]) -> BlockSearch:
        literal = required_literal(pattern)
        exact = literal == pattern.pattern  # any other character would be an operator
        if literal is not None and len(literal) < _SHORTEST_USEFUL_LITERAL and not exact:
            literal = None
        return cls(block_prefilter(pattern), literal, exact)


def block_prefilter(pattern: re.Pattern[str] | None) -> re.Pattern[str] | None:
    """A pattern that finds something in a block's text whenever `pattern` finds something in
    one of its records, or None when no such pattern is known. The records are joined by
    newlines, so `^` and `$` must also match at each line (MULTILINE); a pattern that can look
    past its record's start or end and fail because of what is there is not used."""
    if pattern is None or any(part in pattern.pattern for part in _CONTEXT_SENSITIVE):
        return None
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)


def required_literal(pattern: re.Pattern[str]) -> str | None:
    """The longest run of plain characters that every match of `pattern` contains, or None.

    Read from the pattern as `re` itself parses it: only the items of the top level must all
    match, in order; an alternation there is one item (a branch or a set), a group another.
    A pattern that ignores case has no such literal (the text's bytes would need folding)."""
    if pattern.flags & re.IGNORECASE:
        return None
    parser = _regex_parser()
    try:
        items = parser.parse(pattern.pattern, pattern.flags)
    except (re.error, ValueError, TypeError):
        return None
    longest = ""
    run: list[str] = []
    for operation, argument in items:
        if operation is parser.LITERAL:
            run.append(chr(argument))
            continue
        longest = max(longest, "".join(run), key=len)
        run = []
    longest = max(longest, "".join(run), key=len)
    return longest or None


def _regex_parser() -> Any:
    """The parser of the `re` module (renamed in Python 3.11)."""
    try:
        return importlib.import_module("re._parser")
    except ImportError:  # Python 3.10
        return importlib.import_module("sre_parse")


def decode_matching(body: bytes, search: BlockSearch | None) -> list[tuple[int, StoredRecord]]:
    """The records of a block (its uncompressed `body`, block.unpack) that the search may
    match, with their positions (every record when there is no search)."""
    literal = None if search is None else search.literal
    # A block whose bytes lack the literal is passed over before anything is decoded.
    if literal is not None and body.find(literal.encode("utf-8"), text_start(body)) < 0:
        return []
    columns = columns_of(body)
    return matching_in_span(columns, TextSpan(columns.text, 0, 0, columns.count), search)


@dataclass(frozen=True)
class TextSpan:
    """The texts of records `first` to `last` (not included) of a block, joined by newlines:
    the whole block's text, or one frame of a format-3 block."""

    text: str
    base: int
    """Where `text` starts in the whole block's text (the columns' `starts` count from there)."""
    first: int
    last: int


def matching_in_span(
    columns: BlockColumns, span: TextSpan, search: BlockSearch | None
) -> list[tuple[int, StoredRecord]]:
    """The records of `span` that the search may match, with their positions. After a match,
    the search goes on at the start of the next record, so that a match running across a
    newline cannot hide one in the record after it."""
    if search is None or (search.literal is None and search.in_text is None):
        return [(i, _record(columns, span, i)) for i in range(span.first, span.last)]
    if search.literal is not None:
        return _holding_literal(columns, span, search, search.literal)
    assert search.in_text is not None
    text, pattern_search, starts, base = span.text, search.in_text.search, columns.starts, span.base
    found: list[tuple[int, StoredRecord]] = []
    position = 0
    while position <= len(text) and (match := pattern_search(text, position)) is not None:
        index = bisect_right(starts, match.start() + base, span.first, span.last) - 1
        found.append((index, _record(columns, span, index)))
        position = starts[index + 1] - base
    return found


def _holding_literal(
    columns: BlockColumns, span: TextSpan, search: BlockSearch, literal: str
) -> list[tuple[int, StoredRecord]]:
    """The records holding `literal` that the pattern matches over their own span (all of
    them when the pattern is that literal)."""
    text, starts, lengths, base = span.text, columns.starts, columns.lengths, span.base
    span_search = None if search.exact or search.in_text is None else search.in_text.search
    found: list[tuple[int, StoredRecord]] = []
    at = text.find(literal)
    while at >= 0:
        index = bisect_right(starts, at + base, span.first, span.last) - 1
        start = starts[index] - base
        if span_search is None or span_search(text, start, start + lengths[index]) is not None:
            found.append((index, _record(columns, span, index)))
        at = text.find(literal, starts[index + 1] - base)
    return found


def _record(columns: BlockColumns, span: TextSpan, index: int) -> StoredRecord:
    start = columns.starts[index] - span.base
    return columns.record_with(index, span.text[start : start + columns.lengths[index]])
