"""Files and folders of the agent's state that only its own user may read, whatever the umask.

The journal holds whole log lines (paths, host names, the text of every record), and the other
state files say what was read and shipped, so the state directory and every folder in it are
0700 and every file the agent writes there 0600. Modes are set explicitly after creation, not
left to the umask, so that a service started under `umask 000` (or 022) gets the same modes.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from pathlib import Path

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600

log = logging.getLogger(__name__)

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def folder_problem(path: Path, uid: int | None = None) -> str | None:
    """Why the folder `path` may not hold the state of a process of user `uid` (this process's
    by default), or None when it may; a missing folder is no problem (it will be made 0700).

    State written into a folder that another user can change is state that user can replace
    or redirect: a link planted where a temporary file or the cursors go makes a root process
    write (or chmod) whatever the link names. So, as ssh does with its keys, the folder must be
    owned by `uid` and writable by no one else, and every folder above it must be owned by
    `uid` or root and writable by no one else unless it has the sticky bit (as /tmp has: there
    no one may rename or delete another user's folder). A link on the way counts as its owner's
    and is followed."""
    uid = os.geteuid() if uid is None else uid
    trusted = {0, uid}
    current = Path("/")
    parts = Path(os.path.abspath(path)).parts[1:]  # noqa: PTH100 - resolve() would follow links
    for index, part in enumerate(parts):
        candidate = current / part
        try:
            status = candidate.lstat()
        except FileNotFoundError:
            return None
        except OSError as error:
            return f"{candidate} cannot be examined ({error.strerror or error})"
        if stat.S_ISLNK(status.st_mode):
            if status.st_uid not in trusted:
                return f"{candidate} is a link owned by {_user_name(status.st_uid)}"
            try:
                current = candidate.resolve(strict=True)
                status = current.stat()
            except (OSError, RuntimeError):
                return None if index == len(parts) - 1 else f"{candidate} leads nowhere"
        else:
            current = candidate
        last = index == len(parts) - 1
        if not stat.S_ISDIR(status.st_mode):
            return f"{current} is not a folder"
        owner_ok = status.st_uid == uid if last else status.st_uid in trusted
        if not owner_ok:
            return f"{current} is owned by {_user_name(status.st_uid)}"
        if status.st_mode & _WRITABLE_BY_OTHERS and (last or not status.st_mode & stat.S_ISVTX):
            return f"{current} is writable by others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def _user_name(uid: int) -> str:
    try:
        import pwd  # noqa: PLC0415 - Unix only, like the rest of this module's checks

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def private_directory(path: Path, tighten: bool = True) -> None:
    """Create `path` and its missing parents as 0700 folders, and (`tighten`) make an existing
    `path` 0700: one an older version created with the umask's mode. A folder the operator
    chose for one file (a dead-letter file's) is not tightened: it may be shared.

    A folder with the sticky bit (/tmp, /var/tmp) is shared by design, and one of another user
    is not the agent's to change: both are left as they are, with a warning (what the agent
    writes inside is private anyway)."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(PRIVATE_DIRECTORY)
        except FileExistsError:  # made by another process meanwhile
            if not folder.is_dir():
                raise
        folder.chmod(PRIVATE_DIRECTORY)
    if missing or not tighten:
        return
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode == PRIVATE_DIRECTORY:
        return
    problem = "a shared folder (sticky bit)" if mode & stat.S_ISVTX else None
    if problem is None:
        try:
            path.chmod(PRIVATE_DIRECTORY)
        except PermissionError as error:
            problem = error.strerror or str(error)
    if problem is not None:
        log.warning(
            "%s (mode %o) is not made private: %s; give the agent a folder of its own (the "
            "files it writes there are readable only by its user)",
            path,
            mode,
            problem,
        )


def make_private(path: Path) -> None:
    """Make an existing file 0600 (written by an older version); nothing when it is missing."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_IMODE(path.stat().st_mode) != PRIVATE_FILE:
            path.chmod(PRIVATE_FILE)


def create_private(path: Path, flags: int = os.O_WRONLY) -> int:
    """Open `path`, creating it 0600 when missing (an existing file is made 0600 too); the file
    descriptor."""
    descriptor = os.open(path, flags | os.O_CREAT, PRIVATE_FILE)
    try:
        os.fchmod(descriptor, PRIVATE_FILE)  # the umask may have taken bits off, never added
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor
