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
import stat

SEGMENT_NAME = re.compile(r"^segment-(\d{8})\.db$")
SIDE_FILES = ("-wal", "-shm")
"""SQLite's files beside a segment in WAL mode."""


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


class SegmentUnreadable(sqlite3.DatabaseError):
    """What is in a segment's place cannot be a segment (a folder, a FIFO, a link, a file that
    cannot be opened): the readers treat it as they treat a file SQLite finds damaged."""


_SEGMENT_TABLES = frozenset({"blocks", "notable", "events"})
"""The tables every segment has had since the first journal format."""
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def check_segment_file(path: str | os.PathLike[str]) -> int:
    """The size of the segment file at `path`; raises SegmentUnreadable unless it is a regular
    file this process can open, PermissionError when it may not read it (no damage: the caller
    says who may), and FileNotFoundError when it is gone (retention deleted it since the folder
    was listed).

    SQLite opens the path itself, and would wait for ever on a FIFO (with nothing to read and
    no end) and fail on a folder with "disk I/O error": so the file is opened here first,
    without following a link and without waiting, and looked at. Only the agent's user can
    write in a journal folder (0700), so nothing can change between this look and SQLite's."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (PermissionError, FileNotFoundError):
        raise
    except OSError as error:
        raise SegmentUnreadable(_open_problem(path, error)) from None
    try:
        status = os.fstat(descriptor)
    finally:
        os.close(descriptor)
    problem = not_a_file(status.st_mode)
    if problem is not None:
        raise SegmentUnreadable(problem)
    side = side_file_problem(path)
    if side is not None:
        raise SegmentUnreadable(side)
    return status.st_size


def side_file_problem(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with the write-ahead log or shared-memory file beside a segment (SQLite
    opens them too, and would wait for ever on a FIFO there), or None."""
    for suffix in SIDE_FILES:
        try:
            mode = os.lstat(f"{os.fspath(path)}{suffix}").st_mode
        except FileNotFoundError:
            continue
        problem = not_a_file(mode)
        if problem is not None:
            return f"its {suffix} file is {problem.split(',')[0]}"
    return None


def not_a_file(mode: int) -> str | None:
    """What is wrong with an entry of mode `mode` in a segment's place, or None for a regular
    file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link, not a segment file"
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{kind}, not a segment file"


def _open_problem(path: str | os.PathLike[str], error: OSError) -> str:
    try:
        problem = not_a_file(os.lstat(path).st_mode)
    except OSError:
        problem = None
    return problem or f"cannot be opened: {error.strerror or error}"


def open_readonly(path: str | os.PathLike[str], being_made: bool = True) -> sqlite3.Connection:
    """A read-only connection to a segment, usable from any one thread at a time.

    Raises SegmentUnreadable for what cannot be a segment (check_segment_file), and, unless
    the segment may be `being_made` (the newest one: the agent creates the file, then its
    tables), for an empty file or one without a segment's tables; an SQLite error when the
    file's first page cannot be read."""
    size = check_segment_file(path)
    if size == 0 and not being_made:
        raise SegmentUnreadable("an empty file")
    # In a file: URI, `%`, `?` and `#` in a folder name would change or end the path.
    quoted = os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    db = sqlite3.connect(
        f"file:{quoted}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
    )
    try:
        # Reads the first page: a file that is not a database fails here, not in a later query.
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if not being_made and not tables >= _SEGMENT_TABLES:
            missing = ", ".join(sorted(_SEGMENT_TABLES - tables))
            raise SegmentUnreadable(f"not a journal segment: no table {missing}")
    except BaseException:
        db.close()
        raise
    return db
