"""Log trees as users leave them on a shared host: deep folders, links to files, to folders, to
nothing and to themselves, FIFOs and empty files named like logs, unreadable files, names with
terminal escapes and bytes that are not UTF-8. `build_tree` makes one on disk and says which of
its files a scan must read (regular files with a log name, reached without following a link)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from npuwatch.collector.files import is_log_file
from tests.fuzz.log_text import log_stream

FOLDER_NAMES = ("debug", "run", "plog", "device-0", "device-99999999999999999999", "job", "d")
FILE_NAMES = (
    "plog-4100_20250914093300120.log",
    "plog-99999999999999999999_20250230000000000.log",
    "device-2_20250914093300120.log",
    "train.log",
    "x.log.1",
    "slogdlog",
    "notes.txt",
    "\x1b]52;c;ZXZpbA==\x07.log",  # a name that writes the reader's clipboard
    "\x1b[2J\x1b[31mred.log",
    "new\nline.log",
    "bad\udcff.log",  # the byte 0xff, which is no UTF-8
)
KINDS = (
    "file",
    "file",
    "empty",
    "fifo",
    "link-to-file",
    "link-to-folder",
    "link-to-ancestor",
    "link-to-nothing",
    "link-to-itself",
    "link-outside",
    "unreadable",
    "deep",
)
DEEP_FOLDERS = 1100
"""Deeper than Python's default recursion limit (a recursive walk fails there)."""


@dataclass(frozen=True)
class Entry:
    kind: str
    folder: int
    name: str
    content: bytes = b""
    depth: int = 0


@dataclass
class BuiltTree:
    root: Path
    readable_logs: list[Path] = field(default_factory=list)
    """The files a scan must read: regular, with a log name, reached without a link."""
    special: bool = False
    """It holds something that is not a readable regular file (a scan may report it)."""


def without_report_markers(data: bytes) -> bytes:
    """Log text that no reader takes for an msSanitizer report (a line of `=`)."""
    return data.replace(b"====", b"=-=-")


entries = st.builds(
    Entry,
    kind=st.sampled_from(KINDS),
    folder=st.integers(0, 5),
    name=st.sampled_from(FILE_NAMES),
    content=log_stream(max_lines=8).map(without_report_markers),
    depth=st.sampled_from([3, DEEP_FOLDERS]),
)
folder_paths = st.lists(
    st.lists(st.sampled_from(FOLDER_NAMES), min_size=1, max_size=4).map("/".join),
    max_size=5,
)


def build_tree(base: Path, folders: list[str], plan: list[Entry]) -> BuiltTree:
    """Make the tree under base/tree (and a file outside it, base/outside.log, that links
    point at)."""
    root = base / "tree"
    root.mkdir()
    outside = base / "outside.log"
    outside.write_bytes(b"[ERROR] GE(1,p):2025-09-14-09:30:00.000.000 outside the tree\n")
    made = [root] + [root / folder for folder in folders]
    for folder in made:
        folder.mkdir(parents=True, exist_ok=True)
    tree = BuiltTree(root)
    for entry in plan:
        folder = made[entry.folder % len(made)]
        path = folder / entry.name
        if os.path.lexists(path):
            continue
        tree.special |= _make(entry, path, folder, root, outside)
    tree.readable_logs = sorted(_regular_logs(root))
    return tree


def _make(entry: Entry, path: Path, folder: Path, root: Path, outside: Path) -> bool:
    """Create one entry; whether it is something other than a readable regular file."""
    kind = entry.kind
    if kind in ("file", "empty", "unreadable"):
        path.write_bytes(entry.content if kind != "empty" else b"")
        if kind == "unreadable":
            path.chmod(0)
            return True
        return False
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-file":
        target = folder / "target.log"
        if not target.exists():
            target.write_bytes(entry.content)
        path.symlink_to(target)
    elif kind == "link-to-folder":
        path.symlink_to(folder)
    elif kind == "link-to-ancestor":
        path.symlink_to(root)
    elif kind == "link-to-nothing":
        path.symlink_to(folder / "gone.log")
    elif kind == "link-to-itself":
        path.symlink_to(path)
    elif kind == "link-outside":
        path.symlink_to(outside)
    elif kind == "deep":
        deep = folder / "deep"
        if deep.exists():
            return True
        bottom = deep
        bottom.mkdir()
        for _ in range(entry.depth):  # one at a time: makedirs recurses once per folder
            bottom = bottom / "d"
            bottom.mkdir()
        (bottom / "plog-1_20250914093300120.log").write_bytes(entry.content)
    return True


def _regular_logs(root: Path) -> list[Path]:
    """Regular files with a log name that this process can read, found without following a
    link (an explicit stack: the tree may be deeper than the recursion limit)."""
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in os.scandir(folder):
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                stack.append(Path(entry.path))
            elif stat.S_ISREG(mode) and is_log_file(entry.name) and os.access(entry.path, os.R_OK):
                found.append(Path(entry.path))
    return found


def remove_tree(root: Path) -> None:
    """Remove a tree however deep (shutil.rmtree recurses per folder and fails past the
    recursion limit, and pytest's clean-up of old temporary folders with it)."""
    stack = [root]
    while stack:
        folder = stack[-1]
        folders = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                else:
                    Path(entry.path).unlink()
        if folders:
            stack.extend(folders)
        else:
            folder.rmdir()
            stack.pop()
