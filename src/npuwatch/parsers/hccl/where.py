"""Where a record is, as evidence: its file, its line number and its first line of text.

Line numbers are worked out only for the records that become evidence: summing the line counts
of a batch costs a pass over it, paid once per batch and only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from npuwatch.parsers.hccl.model import CollectiveEvent, Evidence
from npuwatch.records import Record

_EVIDENCE_CHARS = 400
_EVIDENCE_PER_EVENT = 6


class Lines:
    """The line number of each record of a batch, summed once when first asked."""

    __slots__ = ("_first_line", "_records", "_starts")

    def __init__(self, records: Sequence[Record], first_line: int | None) -> None:
        self._records = records
        self._first_line = first_line
        self._starts: list[int] | None = None

    def of(self, position: int) -> int | None:
        if self._first_line is None:
            return None
        if self._starts is None:
            counts = [self._first_line, *(r.line_count for r in self._records)]
            self._starts = list(accumulate(counts))
        return self._starts[position]


class Where:
    """Where a record is: its file and line, worked out only when it becomes evidence."""

    __slots__ = ("_lines", "_position")

    def __init__(self, lines: Lines, position: int) -> None:
        self._lines = lines
        self._position = position

    def evidence(self, record: Record) -> Evidence:
        source = record.source
        line = self._lines.of(self._position)
        text = record.original.split("\n", 1)[0][:_EVIDENCE_CHARS]
        return Evidence(source.path if source else None, line, text, record.timestamp_us)


def add_evidence(event: CollectiveEvent, record: Record, where: Where) -> None:
    if len(event.evidence) < _EVIDENCE_PER_EVENT:
        event.evidence.append(where.evidence(record))
