"""Journal segments as a hard reset, a full disk or a stray process leave them: bytes flipped in
the header or in a page, a file cut short or grown, a page of zeros, an empty file, and things
that are not a database at all (a folder, a FIFO, a link to nothing or to itself)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

PAGE = 4096
DAMAGES = (
    "flip",
    "flip-header",
    "cut",
    "grow",
    "zero-page",
    "empty",
    "folder",
    "fifo",
    "link-to-nothing",
    "link-to-itself",
)


@dataclass(frozen=True)
class Damage:
    kind: str
    segment: int
    """Which segment (an index into the journal's segments, taken modulo their count)."""
    where: int
    """A position in the file (taken modulo its size)."""
    byte: int


damages = st.builds(
    Damage,
    kind=st.sampled_from(DAMAGES),
    segment=st.integers(0, 10),
    where=st.integers(0, 2**20),
    byte=st.integers(0, 255),
)


def damage(path: Path, what: Damage) -> None:
    """Damage one segment file in place."""
    data = path.read_bytes()
    size = len(data)
    kind = what.kind
    if kind in ("flip", "flip-header"):
        at = what.where % (100 if kind == "flip-header" else size)
        path.write_bytes(data[:at] + bytes([data[at] ^ (what.byte or 1)]) + data[at + 1 :])
    elif kind == "cut":
        path.write_bytes(data[: what.where % size])
    elif kind == "grow":
        path.write_bytes(data + bytes([what.byte]) * (1 + what.where % PAGE))
    elif kind == "zero-page":
        start = (what.where % max(size // PAGE, 1)) * PAGE
        path.write_bytes(data[:start] + bytes(PAGE) + data[start + PAGE :])
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
        if kind == "folder":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "link-to-nothing":
            path.symlink_to(path.with_name("gone.db"))
        elif kind == "link-to-itself":
            path.symlink_to(path)


def copy_journal(template: Path, target: Path) -> Path:
    shutil.copytree(template, target, symlinks=True)
    return target
