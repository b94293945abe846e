"""Where a record is, as evidence: its file, its line number and its first line of text.

Line numbers are worked out only for the records that become evidence, by summing the line
counts of the records before them, in C, as far as the last one asked for. A line's evidence
is made once and shared by every fact and event it gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from npuwatch.parsers.hccl.model import CollectiveEvent, Evidence
from npuwatch.records import Record

_EVIDENCE_CHARS = 400
_EVIDENCE_PER_EVENT = 6
_LINE_COUNT = attrgetter("line_count")


class Lines:
    """The line number of records of a batch, summed as far as asked."""

    __slots__ = ("_counted", "_first_line", "_line", "_records")

    def __init__(self, records: Sequence[Record], first_line: int | None) -> None:
        self._records = records
        self._first_line = first_line
        self._counted = 0
        """Records whose line counts are summed into `_line`."""
        self._line = first_line or 0
        """The line number of record `_counted`."""

    def of(self, position: int) -> int | None:
        if self._first_line is None:
            return None
        if position < self._counted:  # evidence is asked for in order; this is a fallback
            self._counted, self._line = 0, self._first_line
        self._line += sum(map(_LINE_COUNT, self._records[self._counted : position]))
        self._counted = position
        return self._line


class Where:
    """Where a record is: its file and line, worked out only when it becomes evidence."""

    __slots__ = ("_evidence", "_lines", "_position", "record")

    def __init__(self, lines: Lines, position: int, record: Record) -> None:
        self._lines = lines
        self._position = position
        self.record = record
        self._evidence: Evidence | None = None

    def evidence(self) -> Evidence:
        evidence = self._evidence
        if evidence is None:
            record = self.record
            source = record.source
            text = record.original
            end = text.find("\n")
            if end >= 0:
                text = text[:end]
            evidence = self._evidence = Evidence(
                source.path if source else None,
                self._lines.of(self._position),
                text[:_EVIDENCE_CHARS],
                record.timestamp_us,
                record.offset,
            )
        return evidence


def add_evidence(event: CollectiveEvent, where: Where) -> None:
    if len(event.evidence) < _EVIDENCE_PER_EVENT:
        event.evidence.append(where.evidence())
