"""Where a journal's segments are on disk, and opening one for reading.

A journal is a folder of `segment-NNNNNNNN.db` files (SQLite), numbered in the order they were
started, with a `quarantine/` folder beside them for segments found unreadable. This module uses
only `os`, `re` and `sqlite3`, and works on plain string paths: `npuwatch grep` imports it on a
path timed against `rg`, where `pathlib` alone costs 5 ms (see docs/adr/0002-grep-start-up.md).
"""

from __future__ import annotations

import os
import re
import sqlite3

SEGMENT_NAME = re.compile(r"^segment-(\d{8})\.db$")


def segment_file_name(sequence: int) -> str:
    return f"segment-{sequence:08d}.db"


def segment_files(directory: str | os.PathLike[str]) -> list[tuple[int, str]]:
    """(sequence, path) of the segments in `directory`, oldest first; none if it is missing."""
    found = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                match = SEGMENT_NAME.match(entry.name)
                if match:
                    found.append((int(match[1]), entry.path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(found)


def open_readonly(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A read-only connection to a segment, usable from any one thread at a time."""
    # In a file: URI, `%`, `?` and `#` in a folder name would change or end the path.
    quoted = os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return sqlite3.connect(
        f"file:{quoted}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
    )
