"""The words of a `grep` question to the journal: the question, a hit, an SQL condition built
clause by clause, and the segments opened read-only, read around their damage (damage.py). Both
plans (query.py, block_scan.py) and the events' search use them.

Kept as light as query.py (NamedTuples, no dataclasses or pathlib): see
docs/adr/0002-grep-start-up.md.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from npuwatch.journal.damage import DamageNotice, is_damage, page_around_damage
from npuwatch.journal.layout import open_readonly, segment_files
from npuwatch.journal.row_text import RowTextDecoder
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.vocabulary import NOTABLE_LEVELS

SOURCE_COLUMNS = "b.file_key, b.path, b.host, b.kind, b.channel, b.device, b.file_pid, b.timezone"

Directory = str | os.PathLike[str]


class Question(NamedTuple):
    """What `grep` asks; empty sets and None mean "any"."""

    pattern: re.Pattern[str] | None = None
    since_us: int | None = None
    until_us: int | None = None
    journaled_since_us: int | None = None
    """When the agent journaled it (not the time the log line says), from..."""
    journaled_until_us: int | None = None
    """...to (both ends included)."""
    levels: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()
    codes: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    device: int | None = None
    host: str | None = None
    pid: int | None = None

    @property
    def by_journal_time(self) -> bool:
        """Whether it bounds when the agent journaled what it asks for."""
        return self.journaled_since_us is not None or self.journaled_until_us is not None

    @property
    def indexed(self) -> bool:
        """Whether the index of notable records holds every possible answer."""
        return bool(self.codes) or (bool(self.levels) and self.levels <= NOTABLE_LEVELS)


class Hit(NamedTuple):
    segment: int
    block_id: int
    position: int
    source: FileSource
    record: StoredRecord
    device: int | None = None


class Where:
    """An SQL condition built clause by clause, with its parameters."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.parameters: list[object] = []

    def add(self, clause: str, *parameters: object) -> None:
        self.clauses.append(clause)
        self.parameters.extend(parameters)

    def any_of(self, column: str, values: Sequence[object]) -> None:
        self.add(f"{column} IN ({','.join('?' * len(values))})", *values)

    def members(self, column: str, values: Sequence[str]) -> None:
        """`column` is a space-delimited set holding any of `values`."""
        self.add(
            "(" + " OR ".join(f"{column} LIKE ?" for _ in values) + ")",
            *(f"% {value} %" for value in values),
        )

    def sql(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "1"


class ReadOnlySegment(NamedTuple):
    """A segment open for `grep`, with the notice its damage is told to (journal/damage.py)."""

    sequence: int
    path: str
    db: sqlite3.Connection
    texts: RowTextDecoder
    """Reads the event documents and notable lines the queries return (journal/row_text.py)."""
    notice: DamageNotice

    def query(self, sql: str, parameters: Sequence[object]) -> list[tuple[Any, ...]]:
        """The rows of `sql`; none from a table the segment does not have (yet: the newest
        segment may be one the agent is making)."""
        try:
            return self.db.execute(sql, parameters).fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return []
            raise

    def rows_after(
        self, sql: str, parameters: Sequence[object], after: int = 0, page: int = 1024
    ) -> Iterator[tuple[Any, ...]]:
        """Every row of `sql` whose key is above `after`, a page at a time, read around damage:
        `sql` selects the key first, orders by it, and takes the first key to read (`key >= ?`)
        as its first parameter and the page's size as its last."""
        while rows := page_around_damage(
            lambda first, count: self.query(sql, [first, *parameters, count]),
            _key,
            after,
            page,
            self.damaged,
        ):
            yield from rows
            after = _key(rows[-1])

    def damaged(self, problem: object) -> None:
        """Part of this segment cannot be read (said once for the segment)."""
        self.notice.damaged(self.path, problem)


def _key(row: Sequence[Any]) -> int:
    return int(row[0])


def say_on_stderr(line: str) -> None:
    """How `grep` says what it leaves out: one line on standard error, after its name."""
    sys.stderr.write(f"npuwatch: {line}\n")


def add_field_filters(
    where: Where, question: Question, prefix: str, host_column: str, written_column: str
) -> None:
    """The filters that the notable index and the events table both have as columns (level,
    module, time, device, pid, host), on the columns named `prefix` + level and so on, and
    the time it was journaled (`written_column`)."""
    if question.levels:
        where.any_of(f"{prefix}level", sorted(question.levels))
    if question.modules:
        where.any_of(f"{prefix}logger", sorted(question.modules))
    if question.since_us is not None:
        where.add(f"{prefix}timestamp_us >= ?", question.since_us)
    if question.until_us is not None:
        where.add(f"{prefix}timestamp_us <= ?", question.until_us)
    add_journaled_filters(where, question, written_column)
    if question.device is not None:
        where.add(f"{prefix}device = ?", question.device)
    if question.pid is not None:
        where.add(f"{prefix}pid = ?", question.pid)
    if question.host is not None:
        where.add(f"{host_column} = ?", question.host)


def add_journaled_filters(where: Where, question: Question, written_column: str) -> None:
    if question.journaled_since_us is not None:
        where.add(f"{written_column} >= ?", question.journaled_since_us)
    if question.journaled_until_us is not None:
        where.add(f"{written_column} <= ?", question.journaled_until_us)


def open_segments(directory: Directory, notice: DamageNotice) -> Iterator[ReadOnlySegment]:
    """Each segment of the journal in turn, open read-only (closed when the next is asked);
    one that cannot be opened is told to `notice` and passed over."""
    segments = segment_files(directory)
    for sequence, path in segments:
        try:
            db = open_readonly(path, being_made=sequence == segments[-1][0])
        except FileNotFoundError:  # removed by retention since the folder was listed
            continue
        except sqlite3.DatabaseError as error:
            if not is_damage(error):
                raise
            notice.unreadable(path, error)
            continue
        try:
            yield ReadOnlySegment(sequence, path, db, RowTextDecoder(db), notice)
        finally:
            db.close()
