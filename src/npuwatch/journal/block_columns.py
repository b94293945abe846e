"""A journal block's columns, taken from its records in one pass: the C extension's
`block_columns` when it was built, else `columns_python` below, the reference it must match
value for value (tests compare the two on arbitrary batches).

Encoding blocks was the largest share of the agent's CPU on a DEBUG flood: a dozen Python
passes over each batch (times, levels, modules, pids, codes, texts, flags, offsets, …), at
25–80 ns a record each. The C pass reads each record's attributes once.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from itertools import accumulate, compress, repeat
from operator import add, and_, attrgetter, or_
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from npuwatch.bounded_numbers import LARGEST, OUT_OF_RANGE_FLAG

if TYPE_CHECKING:  # the query side (`grep`) never loads the record schema
    from npuwatch.records import Record

NONE = -(2**63)
"""Stands for None in the integer columns (no record is dated 292,277 BC, no pid or offset is
that negative)."""
_NONE_BYTES = array("q", [NONE]).tobytes()


_TIMESTAMP = attrgetter("timestamp_us")
_LEVEL = attrgetter("level")
_LOGGER = attrgetter("logger")
_PID = attrgetter("pid")
_CODES = attrgetter("error_codes")
_FLAGS = attrgetter("flags")
_OFFSET = attrgetter("offset")
_END = attrgetter("end_offset")
_ORIGINAL = attrgetter("original")


class Columns(NamedTuple):
    """What a block stores of its records, and what its summary and notable index need."""

    times: bytes
    offsets: bytes
    ends: bytes
    pids: bytes
    """Each as 64-bit integers in the machine's order, NONE for None."""
    lengths: bytes
    """Each record's text length in characters, as 32-bit unsigned integers."""
    names: list[str | None]
    """The levels (first seen first), then the modules that are not also levels."""
    level_index: bytes
    kind: str
    """The width of the two indexes into `names`: "B" (one byte), "H" past 256 names."""
    logger_index: bytes
    distinct_pids: set[int]
    distinct_levels: list[str | None]
    distinct_loggers: list[str | None]
    flags: list[list[int]]
    """[position, flags & the exported bits] of each record with any of those bits."""
    codes: list[list[Any]]
    """[position, error codes] of each record with codes."""
    originals: list[str]
    notable: list[int]
    """The positions of the records with a notable level or with codes."""
    first_us: int | None
    last_us: int | None
    pairs: dict[tuple[str | None, str | None], int]
    """How many records of each (level, module), in the order each pair first comes: what the
    agent's metrics count, taken in the same pass."""


class ColumnsFunction(Protocol):
    def __call__(
        self, records: Sequence[Record], notable_levels: Collection[str], exported_flags: int
    ) -> tuple[object, ...]: ...


def columns_python(
    records: Sequence[Record], notable_levels: Collection[str], exported_flags: int
) -> Columns:
    count = len(records)
    clipped: set[int] = set()
    """Positions of the records with a value no column can hold, stored as None and flagged."""
    times, time_column = _int_column(list(map(_TIMESTAMP, records)), clipped)
    _, offset_column = _int_column(list(map(_OFFSET, records)), clipped)
    _, end_column = _int_column(list(map(_END, records)), clipped)
    pids, pid_column = _int_column(list(map(_PID, records)), clipped)
    # The test for a None is a C-speed scan; the list is made only for batches that hold one.
    present = cast(list[int], [t for t in times if t is not None] if None in times else times)
    levels = list(map(_LEVEL, records))
    loggers = list(map(_LOGGER, records))
    distinct_levels = list(dict.fromkeys(levels))
    distinct_loggers = list(dict.fromkeys(loggers))
    names = list(dict.fromkeys(distinct_levels + distinct_loggers))
    position = {name: index for index, name in enumerate(names)}
    kind = "B" if len(names) <= 256 else "H"
    codes = list(map(_CODES, records))
    originals = list(map(_ORIGINAL, records))
    flag_values: Sequence[int] | None = None
    if clipped:  # the rare batch with a value out of range: those records are flagged
        flag_values = list(map(_FLAGS, records))
        for index in clipped:
            flag_values[index] |= OUT_OF_RANGE_FLAG
    flagged = compress(
        range(count),
        map(
            and_,
            map(_FLAGS, records) if flag_values is None else flag_values,
            repeat(exported_flags),
        ),
    )
    notable = compress(
        range(count), map(or_, map(notable_levels.__contains__, levels), map(bool, codes))
    )
    return Columns(
        times=time_column,
        offsets=offset_column,
        ends=end_column,
        pids=pid_column,
        lengths=array("I", map(len, originals)).tobytes(),
        names=names,
        level_index=array(kind, map(position.__getitem__, levels)).tobytes(),
        kind=kind,
        logger_index=array(kind, map(position.__getitem__, loggers)).tobytes(),
        distinct_pids={pid for pid in pids if pid is not None},
        distinct_levels=distinct_levels,
        distinct_loggers=distinct_loggers,
        flags=[
            [i, (records[i].flags if flag_values is None else flag_values[i]) & exported_flags]
            for i in flagged
        ],
        codes=[[i, codes[i]] for i in compress(range(count), codes)],
        originals=originals,
        notable=list(notable),
        first_us=min(present, default=None),
        last_us=max(present, default=None),
        pairs=dict(Counter(zip(levels, loggers, strict=True))),
    )


def _int_column(values: list[int | None], clipped: set[int]) -> tuple[list[int | None], bytes]:
    """Times, offsets or pids as 64-bit integers, NONE standing for None (firmware pids are -1).

    A value no 64-bit column can hold (or NONE itself) is stored as None and its position added
    to `clipped`: one value costs its column, never the block. Returns the values the column
    holds, and the column.
    """
    try:
        column = array("q", values).tobytes()  # type: ignore[type-var]  # TypeError for a None
    except (TypeError, OverflowError):  # a None (a test, standard input), or out of range
        pass
    else:
        # NONE is a valid 64-bit value: a search of the bytes (at C speed) tells it is absent.
        if _NONE_BYTES not in column or not _holds_none(column):
            return values, column
    kept: list[int | None] = []
    for index, value in enumerate(values):
        if value is not None and not -LARGEST <= value <= LARGEST:
            clipped.add(index)
            value = None
        kept.append(value)
    return kept, array("q", [NONE if value is None else value for value in kept]).tobytes()


def _holds_none(column: bytes) -> bool:
    """Whether NONE is one of the 64-bit integers of `column` (not only bytes across two)."""
    at = column.find(_NONE_BYTES)
    while at >= 0:
        if at % 8 == 0:
            return True
        at = column.find(_NONE_BYTES, at + 1)
    return False


def starts_python(lengths: array[int]) -> bytes:
    """Where each record's text starts in a block's joined text (the records joined by
    newlines), and one past the end: count + 1 64-bit integers, from the records' lengths."""
    ends = accumulate(map(add, lengths, repeat(1, len(lengths))))
    return array("q", [0, *ends]).tobytes()


def _choose() -> tuple[ColumnsFunction, Callable[[array[int]], bytes]]:
    try:
        from npuwatch.journal import _columns  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:
        return columns_python, starts_python
    return _columns.block_columns, _columns.text_starts


_block_columns, _text_starts = _choose()
NATIVE = _block_columns is not columns_python


def text_starts(lengths: array[int]) -> array[int]:
    """starts_python's answer, by the C pass when it was built: a block whose records are
    built (or searched by position) needs it, and in Python it was 45 ns a record."""
    starts = array("q")
    starts.frombytes(_text_starts(lengths))
    return starts


def block_columns(
    records: Sequence[Record], notable_levels: Collection[str], exported_flags: int
) -> Columns:
    """The columns of `records`, by the C pass when it was built."""
    return Columns._make(_block_columns(records, notable_levels, exported_flags))
