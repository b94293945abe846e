"""The records of a batch that can match a rule, and what each is tested against.

Picked at C speed: the records whose level or module some rule is keyed by, those with flags
(codes, another format), and those whose text holds a literal some rule is keyed by (one search of
the batch's bytes per literal first: nearly always it is absent). Each record picked gets the
profile of its signature (rules/profiles.py): the rules it matches without a test, and the tests
left. Then the texts of the records whose tests need a word are searched once for the words of
every rule (rules/word_search.py): a test that needs a word runs only where one was found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import and_, attrgetter, contains, or_
from typing import Any

from npuwatch.records import Flag, Record
from npuwatch.rules.index import RuleIndex
from npuwatch.rules.profiles import Profile
from npuwatch.rules.word_search import ORIGINAL, TEXT

_LOGGER = attrgetter("logger")
_FLAGS = attrgetter("flags")
_FORMAT = attrgetter("format")
_ORIGINAL = attrgetter("original")
_TEXT = attrgetter("text")


def candidates(
    index: RuleIndex,
    levels: list[str | None],
    flagged: list[int],
    loggers: list[str | None] | None,
    records: Sequence[Record],
    kind: str,
    raw: bytes | None,
) -> tuple[Iterable[int], set[int] | frozenset[int]]:
    """Positions of the records that can match any rule, found with C-speed passes: a level
    or module some rule is keyed by, a flag that brings rules (codes), a format some rule is
    keyed by, a literal; and the positions found by a literal. `loggers`, each record's module
    when the parser gave them, spares reading the modules of a batch that holds none of the
    rules' modules."""
    count = len(records)
    if index.everything or kind in index.kinds:
        return range(count), frozenset(range(count)) if index.by_literal else frozenset()
    selectors: Iterator[Any] = map(index.levels.__contains__, levels)
    modules = index.modules
    if modules and (loggers is None or not modules.isdisjoint(loggers)):
        named = map(_LOGGER, records) if loggers is None else loggers
        selectors = map(or_, selectors, map(modules.__contains__, named))
    by_key = list(compress(range(count), selectors))
    if flagged:
        picked = list(map(records.__getitem__, flagged))
        keep: Iterator[Any] = map(and_, map(_FLAGS, picked), repeat(index.flag_mask))
        if index.formats:
            keep = map(or_, keep, map(index.formats.__contains__, map(_FORMAT, picked)))
        flagged = list(compress(flagged, keep))
    positions: Iterable[int] = sorted(set(by_key).union(flagged)) if flagged else by_key
    if not index.by_literal:
        return positions, frozenset()
    # One search of the whole batch per literal first: nearly always the literal is absent.
    # The first record may have started in the chunk before `raw` (the parser holds a record
    # until the next one starts): its own text is searched too.
    batch: bytes | str = raw if raw is not None else "\n".join(map(_ORIGINAL, records))
    first = records[0].original
    lowered: bytes | str | None = None
    lowered_yet = False
    originals: list[str] | None = None
    hits: set[int] = set()
    for text, ignore_case in index.by_literal:
        if ignore_case:
            if not lowered_yet:
                lowered, lowered_yet = _lowered(batch), True
            if not _may_hold(lowered, text.lower()) and text.lower() not in first.lower():
                continue
        elif not _may_hold(batch, text) and text not in first:
            continue
        if originals is None:
            originals = list(map(_ORIGINAL, records))
        if ignore_case:
            matches = map(contains, map(str.lower, originals), repeat(text.lower()))
        else:
            matches = map(contains, originals, repeat(text))
        hits.update(compress(range(count), matches))
    if not hits:
        return positions, frozenset()
    return sorted(hits.union(positions)), hits


def _lowered(batch: bytes | str) -> bytes | str | None:
    """The batch in lower case as `str.lower` lowers each record's text; None when bytes cannot
    say (`bytes.lower` lowers ASCII letters only, and the Kelvin sign is a k to `str.lower`)."""
    if isinstance(batch, bytes) and not batch.isascii():
        return None
    return batch.lower()


def _may_hold(batch: bytes | str | None, text: str) -> bool:
    """Whether `text` may be in the batch (None: the batch cannot say, so it may)."""
    if batch is None:
        return True
    if isinstance(batch, bytes):
        return text.encode() in batch
    return text in batch


def profiled(
    index: RuleIndex,
    positions: Iterable[int],
    literal_hits: set[int] | frozenset[int],
    records: Sequence[Record],
    kind: str,
) -> list[tuple[int, Profile]]:
    """The records at `positions` that can match something, each with its signature's profile."""
    profiles = index.profiles
    by_literal = index.by_literal
    chosen: list[tuple[int, Profile]] = []
    for position in positions:
        record = records[position]
        flags = record.flags
        # The batch's search found every record whose text holds a literal, but for a line
        # decoded from another encoding, whose bytes in `raw` are not its text's.
        literals = (
            index.literals_in(record)
            if by_literal and (position in literal_hits or flags & Flag.INVALID_ENCODING)
            else ()
        )
        codes, numbers, framework = record.error_codes, record.runtime_codes, record.framework_code
        if codes or numbers or framework is not None:
            signature: tuple[Any, ...] = (
                record.level,
                record.logger,
                record.format,
                kind,
                flags,
                literals,
                tuple(codes),
                tuple(numbers),
                framework,
            )
        else:
            signature = (record.level, record.logger, record.format, kind, flags, literals)
        profile = profiles.get(signature)
        if profile is None:
            profile = index.profile(signature, record, literals)
        if profile.matched or profile.tests:
            chosen.append((position, profile))
    return chosen


def words_found(
    index: RuleIndex, chosen: list[tuple[int, Profile]], records: Sequence[Record]
) -> dict[int, int]:
    """The word groups (rules/word_search.py) that the records whose tests need a word hold, as
    bits, by position, for the records that hold any: one search of their joined texts per
    place, then one question to an RE2 set per record found."""
    words = index.words
    found: dict[int, int] = {}
    for place, read in ((TEXT, _TEXT), (ORIGINAL, _ORIGINAL)):
        positions = [position for position, profile in chosen if profile.places & place]
        if not positions:
            continue
        texts = list(map(read, map(records.__getitem__, positions)))
        for index_of in words.holders(place, texts):
            groups = words.groups_in(place, texts[index_of])
            if groups:
                position = positions[index_of]
                found[position] = found.get(position, 0) | groups
    return found
