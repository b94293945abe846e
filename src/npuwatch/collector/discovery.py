"""Finding the files to follow under the configured roots.

A walk with `os.scandir`, which gives each entry's type without a system call per file. Links to
folders are not followed (a link loop cannot trap the walk); links to files are. A folder or file
that cannot be read is reported once, by the caller, and the walk goes on; so is a folder named
like a log file (`x.log/`), whose files are still followed.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from npuwatch.metrics import SourceProblemReason


@dataclass(frozen=True)
class FileFilter:
    """Which files under a root are followed: names matching `include`, not matching `exclude`
    (`exclude` is matched against the name and against the path relative to the root)."""

    include: Sequence[str] = ("*.log", "*.log.*", "slogdlog*")
    exclude: Sequence[str] = ()

    def wants(self, name: str, relative: str) -> bool:
        if self._included.match(name) is None:
            return False
        excluded = self._excluded
        return excluded is None or not (excluded.match(name) or excluded.match(relative))

    # Each pattern list as one regular expression: a rescan of 10,000 files asks this 10,000
    # times, and one match costs a third of three fnmatch calls.
    @cached_property
    def _included(self) -> re.Pattern[str]:
        return _one_pattern(self.include) or re.compile(r"(?!)")

    @cached_property
    def _excluded(self) -> re.Pattern[str] | None:
        return _one_pattern(self.exclude)


def _one_pattern(globs: Sequence[str]) -> re.Pattern[str] | None:
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs))


@dataclass
class FoundFile:
    path: str
    status: os.stat_result


@dataclass(frozen=True)
class SourceProblem:
    """Something under a root that is not followed: where, what is wrong, and its metric reason
    (metrics.SourceProblemReason)."""

    path: str
    problem: str
    reason: SourceProblemReason = "unreadable"


NOT_A_FILE = "not a regular file"
A_FOLDER = "a folder, not a log file (the files in it are followed)"


@dataclass
class Discovery:
    files: list[FoundFile] = field(default_factory=list)
    problems: list[SourceProblem] = field(default_factory=list)
    """What could not be read, or is not what its name says."""


def discover(roots: Sequence[Path], wanted: FileFilter) -> Discovery:
    """Every followed file under `roots`, oldest modification first (the order to read in)."""
    found = Discovery()
    seen: set[tuple[int, int]] = set()
    for root in roots:
        text = str(root)
        _walk(text, text, wanted, found, seen)
    found.files.sort(key=lambda f: (f.status.st_mtime_ns, f.path))
    return found


def _walk(
    root: str, folder: str, wanted: FileFilter, found: Discovery, seen: set[tuple[int, int]]
) -> None:
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    except OSError as error:
        found.problems.append(SourceProblem(folder, error.strerror or str(error)))
        return
    for entry in entries:
        # entry.path is `root`, a separator, then the rest: no relpath (it normalises).
        relative = entry.path[len(root) :].lstrip(os.sep)
        try:
            if entry.is_dir(follow_symlinks=False):
                if wanted.wants(entry.name, relative):
                    found.problems.append(SourceProblem(entry.path, A_FOLDER, "not_regular_file"))
                _walk(root, entry.path, wanted, found, seen)
                continue
            if not wanted.wants(entry.name, relative):
                continue
            status = entry.stat(follow_symlinks=True)
        except FileNotFoundError:
            # A link to nothing is reported; a file deleted since the listing is not.
            if Path(entry.path).is_symlink():
                found.problems.append(SourceProblem(entry.path, "a link to nothing"))
            continue
        except OSError as error:
            found.problems.append(SourceProblem(entry.path, error.strerror or str(error)))
            continue
        if not stat.S_ISREG(status.st_mode):
            found.problems.append(SourceProblem(entry.path, NOT_A_FILE, "not_regular_file"))
            continue
        key = (status.st_dev, status.st_ino)
        if key in seen:  # the same file through a link: follow it once
            continue
        seen.add(key)
        found.files.append(FoundFile(entry.path, status))
