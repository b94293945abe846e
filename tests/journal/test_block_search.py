"""The records of a block a pattern may match: only those are built, and none that matches is
missed, whether the block is searched for the pattern, for the literal every match contains, or
passed over because its bytes lack that literal."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.journal.block import decode_block, encode_block, unpack
from npuwatch.journal.block_search import BlockSearch, decode_matching, required_literal
from npuwatch.records import Record
from tests.journal.conftest import parse_plog, stored
from tests.journal.test_block import MIXED_STREAM


@pytest.fixture
def mixed() -> list[Record]:
    return parse_plog(MIXED_STREAM)


def matching_by_hand(records: list[Record], pattern: re.Pattern[str]) -> list[int]:
    """The positions of the records whose own text the pattern matches: what grep answers."""
    return [i for i, record in enumerate(records) if pattern.search(stored(record).original)]


def built_and_matching(records: list[Record], pattern: re.Pattern[str]) -> list[int]:
    """The positions decode_matching builds that the pattern matches (what grep keeps), after
    checking that every record built is the record stored at its position."""
    payload = encode_block(records).payload
    built = decode_matching(unpack(payload), BlockSearch.of(pattern))
    all_records = decode_block(payload)
    assert all(all_records[i] == record for i, record in built)
    return [i for i, record in built if pattern.search(record.original)]


@pytest.mark.parametrize(
    "pattern",
    [
        r"E30009",
        r"timed out",
        r"^\[INFO\] GE",  # each record's start, inside the joined text too
        r"ok$",
        r"a\s*e",  # runs over the newline between records: a match that is none of theirs
        r"\d+\s+\S",
        r"设备",
        r"设备内存\S+",  # a non-ASCII literal before an operator
        r"stream \d+ is (slow|fast)",
        r"link to rank \d+ timed out",
        r"(?<!x)timed out",  # a look behind: the records holding the literal are built
        r"failure|timed",  # an alternation at the top: no literal
        r"nothing like this",
        r"compile graph",
        r"compile\ngraph",  # a literal with a newline: it never lies inside one record here
    ],
)
def test_only_the_records_where_a_match_starts_are_built_and_none_is_missed(
    mixed: list[Record], pattern: str
) -> None:
    compiled = re.compile(pattern)
    assert built_and_matching(mixed, compiled) == matching_by_hand(mixed, compiled)


def test_a_literal_search_builds_only_the_records_holding_the_literal_that_match(
    mixed: list[Record],
) -> None:
    compiled = re.compile(r"stream \d+ is slow")
    payload = encode_block(mixed).payload
    built = decode_matching(unpack(payload), BlockSearch.of(compiled))
    assert [i for i, _ in built] == matching_by_hand(mixed, compiled) == [3]


def test_a_block_whose_bytes_lack_the_literal_is_passed_over_without_reading_its_text(
    mixed: list[Record],
) -> None:
    body = unpack(encode_block(mixed, compress=False).payload)
    damaged = body[:-1] + b"\xff"  # the text no longer decodes: reading it would raise
    assert decode_matching(damaged, BlockSearch.of(re.compile("no such phrase"))) == []
    with pytest.raises(ValueError, match="unreadable block"):
        decode_matching(damaged, BlockSearch.of(re.compile("stream 7")))


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("Aicore kernel execute failed", "Aicore kernel execute failed"),
        (r"Task run failed, device_id=\d+, stream_id=4\d", "Task run failed, device_id="),
        (r"a\.b", "a.b"),
        (r"abc*", "ab"),  # the last character is repeated, maybe never
        (r"x+ long literal", " long literal"),
        (r"abc|abd", "ab"),  # a common start, which re factors out of the branches
        (r"abc|xyz", None),
        (r"(group) outside", " outside"),
        ("设备内存", "设备内存"),
        (r"(?i)timeout", None),  # ignoring case: the bytes would need folding
        (r"(?x) a b  c", "abc"),  # verbose: the spaces are no part of the pattern
        (r"\d+", None),
    ],
)
def test_the_required_literal_is_what_every_match_contains(
    pattern: str, literal: str | None
) -> None:
    compiled = re.compile(pattern)
    assert required_literal(compiled) == literal
    if literal is not None:
        for text in ("Aicore kernel execute failed", "Task run failed, device_id=3, stream_id=41"):
            match = compiled.search(text)
            assert match is None or literal in match.group(0)


def test_ignoring_case_searches_the_pattern_itself(mixed: list[Record]) -> None:
    compiled = re.compile("STREAM 7", re.IGNORECASE)
    assert BlockSearch.of(compiled).literal is None
    assert built_and_matching(mixed, compiled) == matching_by_hand(mixed, compiled) == [3]


HEADER = "[INFO] GE(1,p):2025-09-14-09:37:31.000.000 [x.cc:1] "


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab 设", min_size=0, max_size=8), min_size=1, max_size=8),
    pattern=st.sampled_from(
        [
            # A match that starts in one record and runs into the next one's header, where the
            # next record's own match starts: it must not hide that one.
            r"(?:a\s+)?\[INFO\] GE\(1,p\):\S+ \[x\.cc:1\] b",
            r"(?:b\s*)?\[INFO\][^\n]*a$",
            r"a\s*\[",
            r"a b",
            r"b$",
            r"\ba",
            r"ab 设",
            r"设b+a",
            r"\] ab",  # the literal "] ab" runs from the header into the text
            r"aaaa",  # occurrences that overlap
            r"(?<!b)aab ",
        ]
    ),
)
def test_a_match_across_records_never_hides_one_in_the_next(texts: list[str], pattern: str) -> None:
    records = parse_plog("".join(f"{HEADER}{text}\n" for text in texts).encode())
    assert len(records) == len(texts)
    compiled = re.compile(pattern)
    assert built_and_matching(records, compiled) == matching_by_hand(records, compiled)
