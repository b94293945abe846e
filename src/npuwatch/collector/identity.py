"""Telling files apart: device, inode, a fingerprint of the first bytes, and the bytes last read.

A path says nothing (CANN names files by pid and time, and a deleted file's name can come back),
and an inode alone is not enough (the file system reuses a freed inode at once). The fingerprint
of the first bytes tells a reused inode or a file truncated and written again from the one that
was read. A short file is fingerprinted over the bytes it has; later checks hash the same prefix.

Two files can share their first bytes (the same process writing the same banner into a reused
inode), so resuming at a stored offset also asks for the bytes just before it: a `ReadMark`. A
file that does not hold them there is another file, and it gets the next `generation`, so that
its key (and the ids of its records in the search engine) differ from the first one's.
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
    generation: int = 0
    """How many files with this device, inode and fingerprint were told apart before this one."""

    @property
    def key(self) -> str:
        """A stable name for the file in checkpoints and journal blocks."""
        base = f"{self.device:x}-{self.inode:x}-{self.fingerprint}"
        return base if not self.generation else f"{base}~{self.generation}"

    @property
    def inode_key(self) -> tuple[int, int]:
        return (self.device, self.inode)

    def successor(self) -> FileIdentity:
        """The identity of another file with the same inode and first bytes."""
        return FileIdentity(
            self.device, self.inode, self.fingerprint_length, self.fingerprint, self.generation + 1
        )


@dataclass(frozen=True)
class ReadMark:
    """The last bytes read of a file before `end` (at most a fingerprint's worth), as a digest."""

    end: int = 0
    length: int = 0
    digest: str = ""

    def found_in(self, fd: int, size: int) -> bool:
        """Whether the open file holds, before `end`, the bytes this mark was taken from."""
        if size < self.end:
            return False
        if not self.length:
            return True
        return _digest(os.pread(fd, self.length, self.end - self.length)) == self.digest


def mark_of(tail: bytes, end: int) -> ReadMark:
    """The mark of `tail`, the bytes of a file that end at `end`."""
    return ReadMark(end, len(tail), _digest(tail) if tail else "")


def holds_tail(fd: int, tail: bytes, end: int) -> bool:
    """Whether the open file holds `tail` just before `end` (the bytes last read are there)."""
    return not tail or os.pread(fd, len(tail), end - len(tail)) == tail


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def identify(fd: int, status: os.stat_result, max_bytes: int) -> FileIdentity | None:
    """The identity of an open file, or None while it is empty (nothing to tell it by)."""
    head = os.pread(fd, max_bytes, 0)
    if not head:
        return None
    return FileIdentity(status.st_dev, status.st_ino, len(head), _digest(head))


def still_same(fd: int, status: os.stat_result, identity: FileIdentity) -> bool:
    """Whether an open file starts as the one `identity` was taken from."""
    if (status.st_dev, status.st_ino) != identity.inode_key:
        return False
    if status.st_size < identity.fingerprint_length:
        return False
    head = os.pread(fd, identity.fingerprint_length, 0)
    return _digest(head) == identity.fingerprint
