"""Files npuwatch takes a secret or its trust from, refused when another user could read or
change them.

A password, an API key or a TLS private key in a file others may read is a secret already
given away; a CA certificate, a server certificate or a web configuration another user may
change decides whom npuwatch trusts, or lets that user in. As ssh does with private keys, such
a file is refused, not warned about: a warning scrolls by in a service's log while the secret
stays readable, and every file here has a one-command fix (`chmod 600 FILE`, `chown`).

Who may read or write is asked of the opened file (`fstat`, and its POSIX ACL when it has
one: systemd hands a service its credentials as root's files with an ACL entry for the
service's user), so the answer is about the file that is then read, not about a path
checked earlier.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from npuwatch.untrusted_files import open_file

MAX_SECRET_BYTES = 1 << 20
"""A secret longer than this is not a password or a key: the file is refused unread."""

_ACL_XATTR = "system.posix_acl_access"
_ACL_HEADER = struct.Struct("<I")
_ACL_ENTRY = struct.Struct("<HHI")
_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = 0x02, 0x04, 0x08, 0x10, 0x20
_READ, _WRITE = 4, 2


class Exposure(Enum):
    """What another user's access to a file gives away."""

    SECRET = "secret"
    """The content is the secret (a password, an API key, a private key, password hashes):
    no one but the owner may read or change it."""
    TRUST = "trust"
    """The content is public but decides whom npuwatch trusts (a CA or server certificate, a
    web configuration without users): no one but the owner may change it."""


class FileRefused(ValueError):
    """A secret or trust file others may read or change, or one that cannot be opened; the
    message is one line naming the file, what is wrong and the fix."""


@dataclass(frozen=True)
class _Access:
    """Who besides the file's owner may read and write it."""

    readers: tuple[str, ...]
    writers: tuple[str, ...]


def check_file(path: Path, what: str, exposure: Exposure, say_path: bool = True) -> None:
    """Raise FileRefused when the file at `path` (described as `what`, e.g. "password file")
    cannot be opened, or when another user may read (a SECRET) or change it. The message
    names the file after `what` unless `say_path` is false (a caller that prints it first)."""
    descriptor = _open(path, what)
    try:
        _check_descriptor(descriptor, path, what if not say_path else f"{what} {path}", exposure)
    finally:
        os.close(descriptor)


def read_secret(path: Path, what: str) -> str:
    """The text of the secret file at `path`, stripped; FileRefused when it cannot be read,
    others may read or change it, or it is empty."""
    descriptor = _open(path, what)
    try:
        _check_descriptor(descriptor, path, f"{what} {path}", Exposure.SECRET)
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_SECRET_BYTES + 1)
    except OSError as error:
        raise FileRefused(f"cannot read the {what} {path}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_SECRET_BYTES:
        raise FileRefused(f"the {what} {path} is larger than {MAX_SECRET_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise FileRefused(f"the {what} {path} is not UTF-8 text") from None
    if not text:
        raise FileRefused(f"the {what} {path} is empty")
    return text


def _open(path: Path, what: str) -> int:
    # untrusted_files: no FIFO blocks the open, and a link is followed only where no other
    # user can swap it (root's own, as Kubernetes mounts secrets, or this user's): a link
    # another user planted at the path would hand npuwatch a file of root's as the secret.
    try:
        return open_file(path)
    except OSError as error:
        reason = "No such file or directory" if error.errno == errno.ENOENT else error.strerror
        raise FileRefused(f"cannot read the {what} {path}: {reason or error}") from None


def _check_descriptor(descriptor: int, path: Path, named: str, exposure: Exposure) -> None:
    """FileRefused when the opened file is not a regular file, or others may change it (or
    read it, when it holds a secret); `named` is how messages name it."""
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        raise FileRefused(f"the {named} is not a regular file")
    mode = f"mode {stat.S_IMODE(status.st_mode):04o}"
    me = os.geteuid()
    if status.st_uid not in (0, me):
        owner = user_name(status.st_uid)
        raise FileRefused(
            f"the {named} is owned by {owner}, who can change it ({mode}): refused; "
            f"run `chown {user_name(me, bare=True)} {path}`"
        )
    access = _access(descriptor, status, me)
    if access.writers:
        fix = _fix(path, exposure, acl=any("ACL" in who for who in access.writers))
        raise FileRefused(
            f"the {named} is writable by {' and '.join(access.writers)} ({mode}): "
            f"refused; run `{fix}`"
        )
    if exposure is Exposure.SECRET and access.readers:
        fix = _fix(path, exposure, acl=any("ACL" in who for who in access.readers))
        raise FileRefused(
            f"the {named} is readable by {' and '.join(access.readers)} ({mode}): "
            f"refused, as ssh refuses such a private key; run `{fix}`"
        )


def _fix(path: Path, exposure: Exposure, acl: bool) -> str:
    chmod = f"chmod {'600' if exposure is Exposure.SECRET else 'go-w'} {path}"
    return f"setfacl -b {path} && {chmod}" if acl else chmod


def _access(descriptor: int, status: os.stat_result, me: int) -> _Access:
    """Who besides the owner, root and this process's user may read and write the file: its
    group and others by the mode bits, or by the ACL's entries when it has one."""
    entries = _acl_entries(descriptor)
    if not entries:
        mode = status.st_mode
        return _Access(
            readers=_named(mode & stat.S_IRGRP, "its group", mode & stat.S_IROTH, "others"),
            writers=_named(mode & stat.S_IWGRP, "its group", mode & stat.S_IWOTH, "others"),
        )
    mask = next((perm for tag, perm, _ in entries if tag == _ACL_MASK), _READ | _WRITE | 1)
    readers: list[str] = []
    writers: list[str] = []
    for tag, perm, qualifier in entries:
        if tag == _ACL_USER and qualifier not in (0, me):
            who = f"{user_name(qualifier)} (an ACL entry)"
        elif tag == _ACL_GROUP_OBJ:
            who = "its group"
        elif tag == _ACL_GROUP:
            who = f"group {qualifier} (an ACL entry)"
        elif tag == _ACL_OTHER:
            who = "others"
        else:
            continue
        effective = perm if tag == _ACL_OTHER else perm & mask
        if effective & _READ:
            readers.append(who)
        if effective & _WRITE:
            writers.append(who)
    return _Access(tuple(readers), tuple(writers))


def _named(first: int, first_name: str, second: int, second_name: str) -> tuple[str, ...]:
    return tuple(name for flag, name in ((first, first_name), (second, second_name)) if flag)


def _acl_entries(descriptor: int) -> list[tuple[int, int, int]]:
    """(tag, permissions, uid or gid) of each entry of the file's access ACL; none when it has
    only the mode bits (or the file system has no ACLs)."""
    try:
        raw = os.getxattr(descriptor, _ACL_XATTR)
    except OSError:  # ENODATA: no ACL; ENOTSUP: none possible here
        return []
    body = raw[_ACL_HEADER.size :]
    usable = len(body) - len(body) % _ACL_ENTRY.size
    return [_ACL_ENTRY.unpack_from(body, offset) for offset in range(0, usable, _ACL_ENTRY.size)]


def user_name(uid: int, bare: bool = False) -> str:
    """`alice (uid 1001)`, or `alice` when `bare`; the number alone when no user has it."""
    try:
        import pwd  # noqa: PLC0415 - Unix only, like the checks that call this

        name = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid) if bare else f"uid {uid}"
    return name if bare else f"{name} (uid {uid})"
