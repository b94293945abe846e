"""Files and folders of npuwatch's own state: only its user may read them, no one else may
change them, whatever the umask and whoever made the folder first.

The journal holds whole log lines (paths, host names, the text of every record), and the other
state files say what was read and shipped, so the state directory and every folder in it are
0700 and every file the agent writes there 0600. Modes are set on the open descriptor, not left
to the umask and never through a path (a link planted at the path would take the chmod).

A state folder another user owns or can write in is refused (`UnsafeFolder`), as ssh refuses a
key others can change: that user could plant a link where a temporary file or the cursors are
written, and a root process would then write, or change the mode of, whatever the link names.
Files are created with O_EXCL | O_NOFOLLOW where they are new, and O_NOFOLLOW where they are
opened again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from npuwatch.untrusted_files import UnsafeFile, user_name

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolder(OSError):
    """A folder npuwatch will not keep state in; str() is one line that says why and what to
    do."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(errno.EPERM, problem, str(path))
        self.problem = problem

    def __str__(self) -> str:
        return (
            f"cannot keep npuwatch's state in {self.filename}: {self.problem}; give a folder "
            f"that only this user owns and can write (the default is /var/lib/npuwatch)"
        )


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
                return f"{candidate} is a link owned by {user_name(status.st_uid)}"
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
            return f"{current} is owned by {user_name(status.st_uid)}"
        if status.st_mode & _WRITABLE_BY_OTHERS and (last or not status.st_mode & stat.S_ISVTX):
            return f"{current} is writable by others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def private_directory(path: Path, tighten: bool = True) -> None:
    """Create `path` and its missing parents as 0700 folders, or check an existing one: it must
    pass `folder_problem` (UnsafeFolder when it does not), and (`tighten`) an existing `path`
    readable by others (an older version made it with the umask's mode) is made 0700. A folder
    the operator chose for one file (a dead-letter file's) is not tightened: it may be read by
    others, as long as no one else can write in it."""
    problem = folder_problem(path)
    if problem is not None:
        raise UnsafeFolder(path, problem)
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by another process meanwhile
            folder.mkdir(PRIVATE_DIRECTORY)
        _set_folder_mode(folder)
    if missing:
        problem = folder_problem(path)  # made meanwhile by someone else?
        if problem is not None:
            raise UnsafeFolder(path, problem)
        return
    if tighten:
        # Any link on the way is root's or this user's (folder_problem): no one else can swap it.
        _set_folder_mode(path.resolve())


def _set_folder_mode(folder: Path) -> None:
    """Make the folder `folder` 0700 through a descriptor (never through a link)."""
    try:
        descriptor = os.open(folder, _FOLDER_FLAGS)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeFolder(folder, "not a folder (a link or a file)") from None
        raise
    try:
        status = os.fstat(descriptor)
        if status.st_uid != os.geteuid():
            raise UnsafeFolder(folder, f"owned by {user_name(status.st_uid)}")
        if stat.S_IMODE(status.st_mode) != PRIVATE_DIRECTORY:
            os.fchmod(descriptor, PRIVATE_DIRECTORY)
    finally:
        os.close(descriptor)


def make_private(path: Path) -> None:
    """Make an existing file 0600 (written by an older version); nothing when it is missing.
    The mode is set on the open file: a link at `path` is refused, not followed."""
    try:
        descriptor = _open_own(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return
    os.close(descriptor)


def create_private(path: Path, flags: int = os.O_WRONLY) -> int:
    """Open `path` (never through a link), creating it 0600 when missing; an existing file must
    be a regular file of this user and is made 0600 too. The file descriptor."""
    return _open_own(path, flags | os.O_CREAT)


def _open_own(path: Path, flags: int) -> int:
    """`path` opened with `flags` and O_NOFOLLOW: a regular file of this user's, made 0600 on
    the descriptor (the umask may have taken bits off, never added), else UnsafeFile."""
    try:
        descriptor = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeFile(path, "a link where npuwatch keeps a file of its own") from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnsafeFile(path, "not a regular file, where npuwatch keeps a file of its own")
        if status.st_uid != os.geteuid():
            owner = user_name(status.st_uid)
            raise UnsafeFile(path, f"a file of {owner}, where npuwatch keeps a file of its own")
        if stat.S_IMODE(status.st_mode) != PRIVATE_FILE:
            os.fchmod(descriptor, PRIVATE_FILE)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def create_new_private(folder: Path, prefix: str) -> tuple[int, Path]:
    """A new 0600 file in `folder` with a name no one could have guessed (O_EXCL | O_NOFOLLOW,
    as tempfile.mkstemp makes it); its descriptor and path."""
    import tempfile  # noqa: PLC0415 - only where a temporary file is written

    descriptor, name = tempfile.mkstemp(dir=folder, prefix=prefix)
    try:
        os.fchmod(descriptor, PRIVATE_FILE)
    except BaseException:
        os.close(descriptor)
        Path(name).unlink(missing_ok=True)
        raise
    return descriptor, Path(name)
