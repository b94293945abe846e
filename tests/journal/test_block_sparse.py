"""A block's sparse columns (flags and codes of the few records that have any) come back as they
went in, in format 2's JSON and format 3's arrays; a damaged format-3 section raises."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npuwatch.journal.block_sparse import decode_sparse, encode_sparse

POSITIONS = st.integers(0, 2**32 - 1)
FLAGS = st.dictionaries(POSITIONS, st.integers(0, 0xFFFF), max_size=20)
CODES = st.dictionaries(
    POSITIONS, st.lists(st.text(max_size=8), min_size=1, max_size=3), max_size=20
)


@given(FLAGS, CODES, st.sampled_from([2, 3]))
def test_the_sparse_columns_come_back_as_they_went_in(
    flags: dict[int, int], codes: dict[int, list[str]], version: int
) -> None:
    pairs = [[p, f] for p, f in sorted(flags.items())]
    code_pairs = [[p, c] for p, c in sorted(codes.items())]
    section = encode_sparse(version, pairs, code_pairs)
    assert decode_sparse(version, section) == (flags, codes)


def test_format_3_stores_no_json_for_the_flags() -> None:
    section = encode_sparse(3, [[5, 1], [9, 256]], [])
    assert section.endswith(b"[]") and b"256" not in section


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s[:4],  # cut in the counts
        lambda s: s[:12],  # cut in the arrays
        lambda s: struct.pack("<II", 99, 1) + s[8:],  # counts larger than the arrays
        lambda s: s[:-1],  # the codes' JSON cut
        lambda s: s.replace(b'[["E30009"]]', b'[["E30009"], []]'),  # a code list too many
    ],
)
def test_a_damaged_format_3_section_raises(damage: object) -> None:
    section = encode_sparse(3, [[5, 1]], [[7, ["E30009"]]])
    with pytest.raises((ValueError, struct.error)):
        decode_sparse(3, damage(section))  # type: ignore[operator]
