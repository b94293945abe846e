"""Telling files apart: device, inode, and a fingerprint of the first bytes.

A path says nothing (CANN names files by pid and time, and a deleted file's name can come back),
and an inode alone is not enough (the file system reuses a freed inode at once). The fingerprint
of the first bytes tells a reused inode or a file truncated and written again from the one that
was read. A short file is fingerprinted over the bytes it has; later checks hash the same prefix.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FileIdentity:
    device: int
    inode: int
    fingerprint_length: int
    fingerprint: str

    @property
    def key(self) -> str:
        """A stable name for the file in checkpoints and journal blocks."""
        return f"{self.device:x}-{self.inode:x}-{self.fingerprint}"

    @property
    def inode_key(self) -> tuple[int, int]:
        return (self.device, self.inode)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def identify(fd: int, status: os.stat_result, max_bytes: int) -> FileIdentity | None:
    """The identity of an open file, or None while it is empty (nothing to tell it by)."""
    head = os.pread(fd, max_bytes, 0)
    if not head:
        return None
    return FileIdentity(status.st_dev, status.st_ino, len(head), _digest(head))


def still_same(fd: int, status: os.stat_result, identity: FileIdentity) -> bool:
    """Whether an open file is the one `identity` was taken from."""
    if (status.st_dev, status.st_ino) != identity.inode_key:
        return False
    if status.st_size < identity.fingerprint_length:
        return False
    head = os.pread(fd, identity.fingerprint_length, 0)
    return _digest(head) == identity.fingerprint
