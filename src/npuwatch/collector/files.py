"""Finding and reading log files for the offline commands (`parse`, `scan`).

Reading is in chunks that end at a line end, so that a 20 MB plog never has to be in memory at
once and the parser always sees whole lines.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.parsers.timestamps import first_full_date_us

CHUNK_BYTES = 4 * 1024 * 1024
LOG_FILE_PATTERNS = ("*.log", "*.log.*", "slogdlog*", "syslog*", "messages*", "dmesg*")
"""What a log tree holds that is worth reading: CANN's `*.log`, slogd's self-log, and the host
logs that asys collects next to them. Profiling output (CSV, JSON) and binaries are left out."""


@dataclass
class TreeListing:
    """The log files found under a root, and what could not be read while looking."""

    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def is_log_file(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in LOG_FILE_PATTERNS)


def list_log_files(root: Path) -> TreeListing:
    """Every log file under `root`, in path order; symbolic links to folders are not followed
    (a link loop cannot trap the walk), unreadable folders are reported, not fatal."""
    listing = TreeListing()

    def report(error: OSError) -> None:
        listing.problems.append(f"cannot read {error.filename}: {error.strerror}")

    for folder, folders, names in os.walk(root, onerror=report):
        folders.sort()
        for name in sorted(names):
            if is_log_file(name):
                path = Path(folder) / name
                if path.is_file():
                    listing.files.append(path)
    return listing


YEAR_PEEK_BYTES = 64 * 1024
"""How far into a file a year for its year-less lines is looked for."""


def year_reference_us(path: Path, modified_us: int) -> int:
    """The time whose year completes the file's dates printed without one: its first date with
    a year (within YEAR_PEEK_BYTES), else its modification time (for a file read whole, after
    the fact: `scan`, `parse`). A file that cannot be read here is reported by the read that
    follows, not by this peek."""
    try:
        with path.open("rb") as handle:
            dated = first_full_date_us(handle.read(YEAR_PEEK_BYTES))
    except OSError:
        return modified_us
    return modified_us if dated is None else dated


def read_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of a file in chunks that end at a line end (the last one may not).

    Raises OSError when the file cannot be opened; the caller reports it.
    """
    with path.open("rb") as handle:
        yield from line_chunks(iter(lambda: handle.read(chunk_bytes), b""), 4 * chunk_bytes)


def line_chunks(blocks: Iterable[bytes], max_pending: int = 4 * CHUNK_BYTES) -> Iterator[bytes]:
    """Re-cut arbitrary blocks (file reads, a pipe) into chunks that end at line ends.

    A "line" longer than `max_pending` bytes is handed over in pieces, so that memory stays
    bounded; the parser cuts such lines anyway.
    """
    pending = b""
    for block in blocks:
        block = pending + block
        cut = block.rfind(b"\n")
        if cut < 0:
            if len(block) > max_pending:
                yield block
                block = b""
            pending = block
            continue
        pending = block[cut + 1 :]
        yield block[: cut + 1]
    if pending:
        yield pending
