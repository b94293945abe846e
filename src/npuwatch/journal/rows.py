"""What reading the journal gives back: a record as a block stores it, and the file it came from.

These are NamedTuples, not dataclasses, and this module imports nothing heavier than `typing`:
`npuwatch grep` loads it on a path that is timed against `rg`, where importing `dataclasses`
alone (10 ms, it pulls in `inspect`) would cost more than answering the question does
(see docs/adr/0002-grep-start-up.md).
"""

from __future__ import annotations

from typing import NamedTuple


class FileSource(NamedTuple):
    """The file a block's records came from, as the block row names it."""

    file_key: str
    path: str
    host: str | None = None
    kind: str | None = None
    channel: str | None = None
    device: int | None = None
    file_pid: int | None = None
    timezone: str | None = None


class StoredRecord(NamedTuple):
    """A record read back from the journal: the fields kept per record, and its text."""

    timestamp_us: int | None
    level: str | None
    logger: str | None
    pid: int | None
    error_codes: list[str]
    flags: int
    offset: int | None
    end_offset: int | None
    original: str
