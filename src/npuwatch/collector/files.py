"""Finding and reading log files for the offline commands (`parse`, `scan`).

Files are found by tree_walk and opened by untrusted_files (the caller opens them). Reading is
in chunks that end at a line end, so that a 20 MB plog never has to be in memory at
once and the parser always sees whole lines.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from npuwatch.parsers.timestamps import first_full_date_us
from npuwatch.tree_walk import NO_LINKS, LinkPolicy, walk_files

CHUNK_BYTES = 4 * 1024 * 1024
LOG_FILE_PATTERNS = ("*.log", "*.log.*", "slogdlog*", "syslog*", "messages*", "dmesg*")
"""What a log tree holds that is worth reading: CANN's `*.log`, slogd's self-log, and the host
logs that asys collects next to them. Profiling output (CSV, JSON) and binaries are left out."""


@dataclass
class TreeListing:
    """The log files found under a root, and what could not be read or was not followed."""

    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def is_log_file(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in LOG_FILE_PATTERNS)


def list_log_files(root: Path, links: LinkPolicy = NO_LINKS) -> TreeListing:
    """Every log file under `root`, in path order, by tree_walk's rules: links followed only as
    `links` says, a FIFO or a device named like a log left out, each such entry and each
    folder that cannot be read reported in one line, never fatal."""
    walk = walk_files([str(root)], lambda name, _: is_log_file(name), links, report_folders=False)
    listing = TreeListing(sorted(Path(found.path) for found in walk.files))
    for problem in walk.problems:
        verb = "cannot read" if problem.reason == "unreadable" else "skipping"
        listing.problems.append(f"{verb} {problem.path}: {problem.problem}")
    return listing


YEAR_PEEK_BYTES = 64 * 1024
"""How far into a file a year for its year-less lines is looked for."""


def year_reference_us(handle: BinaryIO, modified_us: int) -> int:
    """The time whose year completes the dates of the open file printed without one: its first
    date with a year (within YEAR_PEEK_BYTES), else its modification time (for a file read
    whole, after the fact: `scan`, `parse`). The peek does not move the file's position; what
    cannot be read here is reported by the read that follows."""
    return year_reference_of_fd(handle.fileno(), modified_us)


def year_reference_of_fd(fd: int, modified_us: int) -> int:
    """year_reference_us for an open descriptor (a followed file: its modification time is
    about now)."""
    try:
        dated = first_full_date_us(os.pread(fd, YEAR_PEEK_BYTES, 0))
    except OSError:
        return modified_us
    return modified_us if dated is None else dated


def read_chunks(handle: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of an open file in chunks that end at a line end (the last one may not)."""
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
