# ruff: noqa: PTH100, PTH114, PTH115, PTH116, PTH118, PTH120 - paths as strings, one system call a component
"""Opening what npuwatch reads: files that other users own, in folders they can change.

The agent runs as root and reads every user's ~/ascend/log; `scan` run by root reads a user's
collection. A user who can change a folder can put a link where a log file is expected
(`plog-1.log -> /etc/shadow`), swap a folder for a link between the moment it was listed and
the moment a file in it is opened, or put a FIFO or a device node there. So every file npuwatch
reads is opened here, in one way:

- `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`: the kernel opens no link in the last place, a FIFO
  cannot block the open, a child process inherits nothing;
- `fstat` after the open: anything but a regular file is refused (a FIFO, a device, a socket);
- a link in the last place is followed only when root or this process's user owns it and its
  folder is trusted (see below); where it leads is then checked in the same way;
- where the file was reached: the kernel names the file it opened (/proc/self/fd), and that name
  must be the path asked for, with only the links of trusted folders resolved. A folder is
  trusted when root or this process's user owns it and no one else may write in it: its
  entries cannot be swapped by anyone else, so a link in it (`/home -> /data/home`, made by the
  administrator) is followed. Below the first folder that another user controls, no link is
  followed at all: the check is made on the file actually opened, so no swap between a check
  and the open can pass it;
- a hard link to a file of another user (a user may link a file of root's into their folder
  where the kernel's protected_hardlinks is off) is refused: a file with more than one name
  must belong to the owner of the folders it was found in.

Every refusal is an `UnsafeFile` (an OSError: callers that report unreadable files report
these with the same line, saying what was refused and why).

A path an operator names on the command line (`npuwatch parse ./latest.log`) is theirs to
name: `named=True` follows links in it, and still refuses what is not a regular file.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH

StrPath = str | os.PathLike[str]


class UnsafeFile(OSError):
    """A file npuwatch will not read: `strerror` says why, in words for a report line."""

    def __init__(self, path: StrPath, why: str, code: int = errno.EPERM) -> None:
        super().__init__(code, why, os.fspath(path))


def open_file(path: StrPath, named: bool = False) -> int:
    """A read-only descriptor of the regular file at `path` (see the module docstring).

    Raises OSError: the open's own (missing, permission denied) or UnsafeFile."""
    text = os.path.abspath(os.fspath(path))
    if named:
        descriptor = os.open(text, _FLAGS)
        try:
            _check_regular(descriptor, text)
        except BaseException:
            os.close(descriptor)
            raise
        return descriptor
    try:
        descriptor = os.open(text, _FLAGS | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno != errno.ELOOP or not os.path.islink(text):
            raise
        owner = os.lstat(text).st_uid
        if owner not in (0, os.geteuid()):
            raise UnsafeFile(text, f"a link owned by {user_name(owner)}, not followed") from None
        if trusted_anchor(os.path.dirname(text), os.geteuid()).rest:
            # Another user may swap it between this look and the next: not followed either.
            raise UnsafeFile(
                text, "a link in a folder another user controls, not followed"
            ) from None
        # Root's link, or this user's own, in a trusted folder: where it leads is checked in
        # the same way as any other path.
        target = os.path.realpath(text)
        if target == text:
            raise UnsafeFile(text, "a link loop", errno.ELOOP) from None
        return open_file(target)
    try:
        status = _check_regular(descriptor, text)
        folder, name = os.path.split(text)
        anchor = trusted_anchor(folder, os.geteuid())
        if not _opened_where_asked(descriptor, anchor, name, status):
            raise UnsafeFile(text, "reached through a link in a folder another user controls")
        if status.st_nlink > 1 and status.st_uid != anchor.owner:
            raise UnsafeFile(text, "a hard link to a file of another user")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def open_binary(path: StrPath, named: bool = False) -> BinaryIO:
    """`open_file` as a binary file object (closing it closes the descriptor)."""
    return os.fdopen(open_file(path, named), "rb")


def read_file(path: StrPath, named: bool = False, limit: int = -1) -> bytes:
    """The bytes of the file at `path` (its first `limit` bytes when `limit` >= 0), opened by
    `open_file`."""
    with open_binary(path, named) as handle:
        return handle.read(limit)


def read_text(path: StrPath, named: bool = False) -> str:
    """The text of a UTF-8 file opened by `open_file` (UnicodeDecodeError when it is not)."""
    return read_file(path, named).decode("utf-8")


def read_trusted_file(path: StrPath) -> bytes:
    """The bytes of a file whose content decides what npuwatch does (its configuration, a rule
    pack), as an operator named it: refused (UnsafeFile) when a user other than root or this
    process's could change it (its owner, or write permission for its group or others), as
    Filebeat refuses such a configuration: whoever can change it can make npuwatch, as root,
    read what it should not and ship it where they like."""
    with open_binary(path, named=True) as handle:
        status = os.fstat(handle.fileno())
        problem = change_problem(status)
        if problem is not None:
            raise UnsafeFile(path, f"{problem}: chmod go-w and chown it to root, or this user")
        return handle.read()


def change_problem(status: os.stat_result) -> str | None:
    """Why a file with `status` could be changed by a user other than root or this process's
    (in words), or None."""
    if status.st_uid not in (0, os.geteuid()):
        return f"owned by {user_name(status.st_uid)}"
    if status.st_mode & _WRITABLE_BY_OTHERS:
        return f"writable by others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def _check_regular(descriptor: int, path: str) -> os.stat_result:
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        raise UnsafeFile(path, f"not a regular file ({kind_of(status.st_mode)})", errno.EINVAL)
    return status


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a link"
    return "not a file"


def user_name(uid: int) -> str:
    """`name (uid N)`, or `uid N` for a user the password database does not know."""
    try:
        import pwd  # noqa: PLC0415 - Unix only

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


class Anchor:
    """Where the trusted part of a folder's path really is, and what lies below it.

    `real` is the real path of the longest leading part of the folder that only trusted users
    can change (its links resolved); `rest` the names below it, none of which may be a link;
    `owner` the owner of the folder itself."""

    __slots__ = ("owner", "real", "rest")

    def __init__(self, real: str, rest: tuple[str, ...], owner: int) -> None:
        self.real = real
        self.rest = rest
        self.owner = owner


@functools.lru_cache(maxsize=4096)
def trusted_anchor(folder: str, uid: int) -> Anchor:
    """The `Anchor` of the absolute path `folder` for a process of user `uid`.

    Kept once worked out: what makes a part trusted is that no one but root or `uid` can change
    it, so it stays true; and should root change it, a kept anchor can only make a file be
    refused, never one reached through a link be accepted (the check is on the file opened)."""
    trusted = (0, uid)
    real = "/"
    owner = 0
    parts = [part for part in folder.split("/") if part]
    for index, part in enumerate(parts):
        candidate = os.path.join(real, part)
        try:
            status = os.lstat(candidate)
            if stat.S_ISLNK(status.st_mode):
                if status.st_uid not in trusted:
                    return Anchor(real, tuple(parts[index:]), status.st_uid)
                candidate = os.path.realpath(candidate)
                status = os.stat(candidate)
        except OSError:
            return Anchor(real, tuple(parts[index:]), owner)
        if (
            status.st_uid not in trusted
            or not stat.S_ISDIR(status.st_mode)
            or (status.st_mode & _WRITABLE_BY_OTHERS and not status.st_mode & stat.S_ISVTX)
        ):
            # Another user's folder, or one anyone may write in: what is below it is theirs to
            # change. Its own place is sure (its parent is trusted); nothing below it is.
            return Anchor(candidate, tuple(parts[index + 1 :]), status.st_uid)
        real = candidate
        owner = status.st_uid
    return Anchor(real, (), owner)


def _opened_where_asked(descriptor: int, anchor: Anchor, name: str, status: os.stat_result) -> bool:
    """Whether the open file is the one at anchor.real/rest/name, reached without a link."""
    expected = os.path.join(anchor.real, *anchor.rest, name)
    try:
        return os.readlink(f"/proc/self/fd/{descriptor}") == expected
    except OSError:
        return _reached_without_links(anchor, name, status)


def _reached_without_links(anchor: Anchor, name: str, status: os.stat_result) -> bool:
    """Without /proc: walk from the anchor one folder at a time, refusing links, and compare the
    file found there with the file opened."""
    folder = os.open(anchor.real, _FOLDER_FLAGS)
    try:
        for part in anchor.rest:
            inner = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        found = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    finally:
        os.close(folder)
    return (found.st_dev, found.st_ino) == (status.st_dev, status.st_ino)
