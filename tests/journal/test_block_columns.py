"""A block's columns: the C pass (the extension, when built) gives what the Python reference
gives, value for value, on any batch of records; and each column says what the records hold."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.journal import block_columns as module
from npuwatch.journal.block import decode_block, encode_block
from npuwatch.journal.block_columns import (
    NONE,
    Columns,
    block_columns,
    columns_python,
    starts_python,
    text_starts,
)
from npuwatch.records import Flag, Record
from npuwatch.vocabulary import NOTABLE_LEVELS
from tests.journal.conftest import parse_plog
from tests.journal.test_block import MIXED_STREAM, records

EXPORTED = 0xFFFF

native = pytest.mark.skipif(
    not module.NATIVE, reason="the C extension is not built here (tests/install builds both)"
)


def c_columns(batch: list[Record]) -> Columns:
    return block_columns(batch, NOTABLE_LEVELS, EXPORTED)


@native
@settings(max_examples=500, deadline=None)
@given(st.lists(records(), max_size=40))
def test_the_c_pass_gives_what_the_python_reference_gives(batch: list[Record]) -> None:
    by_c, by_python = c_columns(batch), columns_python(batch, NOTABLE_LEVELS, EXPORTED)
    assert by_c == by_python
    assert list(by_c.pairs) == list(by_python.pairs)  # the metrics' label sets, in order


@native
def test_the_c_pass_counts_a_batch_of_thousands_of_levels_and_modules_too() -> None:
    """Past 4M (level, module) cells the pairs are counted in a dict, not a table."""
    batch = []
    for number in range(2100):
        record = Record(f"line {number}", "slog")
        record.level, record.logger = f"L{number}", f"M{number % 2099}"
        batch.append(record)
    by_c, by_python = c_columns(batch), columns_python(batch, NOTABLE_LEVELS, EXPORTED)
    assert by_c == by_python and list(by_c.pairs) == list(by_python.pairs)
    assert by_c.pairs[("L2099", "M0")] == 1 and len(by_c.pairs) == 2100


@native
def test_the_c_pass_counts_more_than_256_names_with_two_byte_indexes() -> None:
    batch = parse_plog(
        "".join(
            f"[INFO] MOD{i}(1,p):2025-09-14-09:37:31.000.000 [a.cc:1] [1]x\n" for i in range(300)
        ).encode()
    )
    columns = c_columns(batch)
    assert columns == columns_python(batch, NOTABLE_LEVELS, EXPORTED)
    assert columns.kind == "H" and len(columns.names) == 301  # INFO and 300 modules


@pytest.fixture(params=["c", "python"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with it runs once with the C pass and once with the Python reference."""
    if request.param == "python":
        monkeypatch.setattr(module, "_block_columns", columns_python)
    elif not module.NATIVE:
        pytest.skip("the C extension is not built here (tests/install builds both)")
    return str(request.param)


def test_a_value_past_64_bits_is_stored_as_none_and_flagged_and_the_block_kept(
    implementation: str,
) -> None:
    too_late, huge_pid, far, reserved, plain = (Record(f"r{i}", "slog") for i in range(5))
    too_late.timestamp_us = 2**63
    huge_pid.pid = 10**30
    far.offset, far.end_offset = -(2**64), 2**70
    reserved.pid = NONE  # the one 64-bit value that stands for None
    plain.pid, plain.timestamp_us, plain.offset = 7, 1_000, 3
    block = encode_block([too_late, huge_pid, far, reserved, plain])
    decoded = decode_block(block.payload)
    assert [(r.timestamp_us, r.pid, r.offset, r.end_offset) for r in decoded] == [
        (None, None, None, None),
        (None, None, None, None),
        (None, None, None, None),
        (None, None, None, None),
        (1_000, 7, 3, None),
    ]
    assert [r.flags for r in decoded] == [Flag.VALUE_OUT_OF_RANGE] * 4 + [0]
    assert [r.original for r in decoded] == ["r0", "r1", "r2", "r3", "r4"]
    assert block.summary.pids == " 7 "
    assert (block.summary.first_us, block.summary.last_us) == (1_000, 1_000)


def test_a_text_that_is_no_str_fails_the_block_in_both(implementation: str) -> None:
    not_text = Record(b"bytes", "slog")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_block([not_text])


any_integer = st.none() | st.integers() | st.sampled_from([2**63, -(2**63), 2**63 - 1, -(2**64)])


@st.composite
def records_with_any_integers(draw: st.DrawFn) -> Record:
    """A record whose times, offsets and pid are any integers at all (a parser's bug)."""
    record = draw(records())
    record.timestamp_us = draw(any_integer)
    record.pid = draw(any_integer)
    record.offset = draw(any_integer)
    record.end_offset = draw(any_integer)
    record.flags = draw(st.integers(0, 2**18 - 1))
    return record


@settings(max_examples=300, deadline=None)
@given(st.lists(records_with_any_integers(), max_size=12))
def test_any_integer_is_journaled_without_an_error_the_same_by_both_passes(
    batch: list[Record],
) -> None:
    by_python = columns_python(batch, NOTABLE_LEVELS, EXPORTED)
    if module.NATIVE:
        assert c_columns(batch) == by_python
    decoded = decode_block(encode_block(batch).payload)
    for record, kept in zip(batch, decoded, strict=True):
        values = (record.timestamp_us, record.pid, record.offset, record.end_offset)
        fitting = [v is None or -(2**63) < v < 2**63 for v in values]
        assert (kept.timestamp_us, kept.pid, kept.offset, kept.end_offset) == tuple(
            v if fit else None for v, fit in zip(values, fitting, strict=True)
        )
        assert kept.flags == (record.flags | (0 if all(fitting) else Flag.VALUE_OUT_OF_RANGE)) & (
            EXPORTED
        )


@settings(max_examples=200, deadline=None)
@given(st.lists(records(), max_size=12), st.booleans())
def test_the_python_reference_encodes_the_same_block(batch: list[Record], compress: bool) -> None:
    """What a host without a compiler writes is the block the C pass writes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "_block_columns", columns_python)
        by_python = encode_block(batch, compress=False)
    assert by_python == encode_block(batch, compress=False)


def test_the_columns_hold_what_the_records_say() -> None:
    batch = parse_plog(MIXED_STREAM)
    columns = block_columns(batch, NOTABLE_LEVELS, EXPORTED)
    times = array("q")
    times.frombytes(columns.times)
    assert [None if t == NONE else t for t in times] == [r.timestamp_us for r in batch]
    lengths = array("I")
    lengths.frombytes(columns.lengths)
    assert list(lengths) == [len(r.original) for r in batch]
    index = array(columns.kind)
    index.frombytes(columns.logger_index)
    assert [columns.names[i] for i in index] == [r.logger for r in batch]
    assert columns.notable == [
        i for i, r in enumerate(batch) if r.level in NOTABLE_LEVELS or r.error_codes
    ]
    assert columns.codes == [[i, r.error_codes] for i, r in enumerate(batch) if r.error_codes]
    flagged = [[i, r.flags & EXPORTED] for i, r in enumerate(batch) if r.flags & EXPORTED]
    assert columns.flags == flagged
    dated = [r.timestamp_us for r in batch if r.timestamp_us is not None]
    assert (columns.first_us, columns.last_us) == (min(dated), max(dated))
    assert columns.distinct_pids == {r.pid for r in batch if r.pid is not None}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=50))
def test_the_text_starts_are_the_lengths_summed_with_their_newlines(lengths: list[int]) -> None:
    stored = array("I", lengths)
    expected = [0]
    for length in lengths:
        expected.append(expected[-1] + length + 1)
    assert array("q", starts_python(stored)).tolist() == expected
    assert text_starts(stored).tolist() == expected  # by the C pass, when it is built
