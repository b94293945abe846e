# ruff: noqa: PTH116, PTH118 - paths as strings, one system call an entry
"""Walking a folder tree that other users may own: the files in it, and what was not followed.

The agent's discovery, `scan` and `parse` of a tree, and the importers of profiling runs and
debugging-tool outputs find files here, with one rule for links, like Filebeat's: a link is not
followed unless the operator asked for it (`follow_links`, `--follow-links`), and then only to a
regular file inside the roots being walked, owned by the owner of the link (a user may link to
their own log elsewhere, never to root's files). A link to a folder is never followed (a loop
could not end). Every link left, and every entry that is not a regular file (a FIFO named
`x.log`, a device), is said once as a `WalkProblem`, and the walk goes on.

The walk keeps its own list of folders to enter (no recursion: a tree 10,000 folders deep is
walked like a flat one), and a file reached twice (a file and a followed link to it) once.
What it finds is only a list: the file is opened by `untrusted_files.open_file`, which checks
again, on the open file, that no link another user planted led to it.
"""

# ruff: noqa: PTH116 - paths as strings: one system call an entry
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from npuwatch.untrusted_files import kind_of, user_name

WalkProblemReason = Literal["unreadable", "not_regular_file", "link_not_followed"]
"""Why an entry is not followed: the label values of the agent's `source_problems` metric."""

NOT_A_FILE = "not a regular file"
A_FOLDER = "a folder, not a log file (the files in it are followed)"
LINK_NOT_FOLLOWED = "a link, not followed (links are followed only with follow_links)"


@dataclass(frozen=True)
class LinkPolicy:
    """Whether links to files are followed while walking (see the module docstring)."""

    follow: bool = False


NO_LINKS = LinkPolicy()
"""The default: no link is followed."""


@dataclass
class WalkedFile:
    path: str
    """Where to open it: the file's path, or a followed link's target."""
    status: os.stat_result


@dataclass(frozen=True)
class WalkProblem:
    """An entry that is not followed: where, what is wrong, and the reason for the metric."""

    path: str
    problem: str
    reason: WalkProblemReason = "unreadable"


@dataclass
class Walk:
    files: list[WalkedFile] = field(default_factory=list)
    problems: list[WalkProblem] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    """Every folder entered, roots included, in the order entered."""


Wanted = Callable[[str, str], bool]
"""Whether an entry is wanted, by its name and its path relative to its root."""


def walk_files(
    roots: Iterable[str],
    wanted: Wanted,
    links: LinkPolicy = NO_LINKS,
    report_folders: bool = True,
) -> Walk:
    """Every wanted regular file under `roots`, in the order the folders were listed.

    A wanted name that is a folder is reported (`report_folders`) and entered all the same."""
    walk = Walk()
    seen: set[tuple[int, int]] = set()
    real_roots = [os.path.realpath(root) for root in roots]
    for root in roots:
        pending = [root]
        while pending:
            folder = pending.pop()
            walk.folders.append(folder)
            entries = _listing(folder, walk)
            subfolders: list[str] = []
            for entry in entries:
                relative = entry.path[len(root) :].lstrip(os.sep)
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if report_folders and wanted(entry.name, relative):
                            walk.problems.append(
                                WalkProblem(entry.path, A_FOLDER, "not_regular_file")
                            )
                        subfolders.append(entry.path)
                        continue
                    if not wanted(entry.name, relative):
                        continue
                    if entry.is_symlink():
                        found = _through_link(entry.path, links, real_roots, walk)
                        if found is None:
                            continue
                    else:
                        found = WalkedFile(entry.path, entry.stat(follow_symlinks=False))
                except FileNotFoundError:  # deleted since the listing
                    continue
                except OSError as error:
                    walk.problems.append(WalkProblem(entry.path, error.strerror or str(error)))
                    continue
                if not stat.S_ISREG(found.status.st_mode):
                    problem = f"{NOT_A_FILE} ({kind_of(found.status.st_mode)})"
                    walk.problems.append(WalkProblem(entry.path, problem, "not_regular_file"))
                    continue
                key = (found.status.st_dev, found.status.st_ino)
                if key not in seen:  # the same file through a link: followed once
                    seen.add(key)
                    walk.files.append(found)
            pending.extend(reversed(subfolders))  # listed in name order
    return walk


def walk_folders(
    root: str, problems: list[WalkProblem] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk` for a tree other users own: (folder, subfolders, files) top-down, the
    subfolders' list cut by the caller to prune; only real folders and regular files are named
    (no link, FIFO or device: each is added to `problems` when given), and no recursion."""
    pending = [root]
    while pending:
        folder = pending.pop()
        walk = Walk()
        subfolders: list[str] = []
        files: list[str] = []
        for entry in _listing(folder, walk):
            try:
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry.name)
                elif entry.is_symlink():
                    walk.problems.append(
                        WalkProblem(entry.path, LINK_NOT_FOLLOWED, "link_not_followed")
                    )
                else:
                    kind = kind_of(entry.stat(follow_symlinks=False).st_mode)
                    problem = f"{NOT_A_FILE} ({kind})"
                    walk.problems.append(WalkProblem(entry.path, problem, "not_regular_file"))
            except OSError as error:
                walk.problems.append(WalkProblem(entry.path, error.strerror or str(error)))
        if problems is not None:
            problems.extend(walk.problems)
        yield folder, subfolders, files
        pending.extend(os.path.join(folder, name) for name in reversed(subfolders))


def _listing(folder: str, walk: Walk) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except FileNotFoundError:
        return []
    except OSError as error:
        walk.problems.append(WalkProblem(folder, error.strerror or str(error)))
        return []


def _through_link(
    path: str, links: LinkPolicy, real_roots: list[str], walk: Walk
) -> WalkedFile | None:
    """The file a link leads to, when the policy lets it be followed; else None, said."""
    if not links.follow:
        walk.problems.append(WalkProblem(path, LINK_NOT_FOLLOWED, "link_not_followed"))
        return None
    link = os.lstat(path)
    target = os.path.realpath(path)
    try:
        status = os.stat(target)
    except OSError as error:
        problem = "a link loop" if error.errno == errno.ELOOP else "a link to nothing"
        walk.problems.append(WalkProblem(path, problem, "link_not_followed"))
        return None
    why = None
    if status.st_uid != link.st_uid:
        why = f"a link to a file of {user_name(status.st_uid)}, not followed"
    elif not any(_inside(target, root) for root in real_roots):
        why = "a link to a file outside the folders walked, not followed"
    if why is not None:
        walk.problems.append(WalkProblem(path, why, "link_not_followed"))
        return None
    return WalkedFile(target, status)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
