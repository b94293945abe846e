"""File modes for the tests of the agent's private state: a process umask for one test, and
the permission bits of a path."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def umask(value: int) -> Iterator[None]:
    """The process's umask set to `value` for the block (the most permissive is 0o000)."""
    before = os.umask(value)
    try:
        yield
    finally:
        os.umask(before)


def mode_of(path: Path) -> int:
    """The permission bits of `path` (not following a symbolic link), as 0o700 or 0o600."""
    return stat.S_IMODE(path.lstat().st_mode)


def modes_under(folder: Path) -> dict[str, int]:
    """The mode of every folder and file under `folder` (and of itself, as "."), by relative
    path."""
    modes = {".": mode_of(folder)}
    for path in sorted(folder.rglob("*")):
        modes[str(path.relative_to(folder))] = mode_of(path)
    return modes
