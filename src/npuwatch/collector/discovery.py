"""Finding the files to follow under the configured roots.

The walk is tree_walk's (`os.scandir`, which gives each entry's type without a system call per
file): links are followed only as [sources] follow_links says, a FIFO or a device named like a
log is not read, and a folder or file that cannot be read is reported once, by the caller, and
the walk goes on; so is a folder named like a log file (`x.log/`), whose files are still
followed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from npuwatch.tree_walk import NO_LINKS, LinkPolicy, Walk, walk_files


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


def discover(roots: Sequence[Path], wanted: FileFilter, links: LinkPolicy = NO_LINKS) -> Walk:
    """Every followed file under `roots`, oldest modification first (the order to read in), and
    what was not followed (tree_walk: links, FIFOs, unreadable folders)."""
    found = walk_files([str(root) for root in roots], wanted.wants, links)
    found.files.sort(key=lambda f: (f.status.st_mtime_ns, f.path))
    return found
