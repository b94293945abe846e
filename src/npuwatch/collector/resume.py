"""Where to take up a file found at the inode of a stored checkpoint, after a restart.

Only where it is the file that was read: its first bytes match the fingerprint, it is at least as
long as the journaled offset, and it holds the bytes last read before the checkpoint's mark. A
reused inode with other first bytes is another file; one with the same first bytes but other
content (the same process banner, a file written again in place while no agent ran) is another
file too, and gets the next generation of the identity, so that its key differs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from npuwatch.collector.identity import FileIdentity, ReadMark, still_same
from npuwatch.handoff import Checkpoint


@dataclass(frozen=True)
class Resumption:
    identity: FileIdentity
    start: int
    """The byte to read from."""
    journal_from: int
    """Records that start before this byte are in the journal already (replayed to the rules)."""
    replaced: bool
    """The checkpoint's file is gone: this is another one (read from its start)."""
    same_start: bool = False
    """…which starts with the same bytes as the one read."""


def resume(
    fd: int, status: os.stat_result, identity: FileIdentity, stored: Checkpoint
) -> Resumption:
    """How to follow the open file `fd` (whose own identity is `identity`) given the checkpoint
    stored for its device and inode."""
    known = FileIdentity(
        stored.device, stored.inode, stored.fingerprint_length, stored.fingerprint,
        stored.generation,
    )  # fmt: skip
    if not still_same(fd, status, known):
        return Resumption(identity, 0, 0, replaced=True)
    mark = ReadMark(stored.mark_end, stored.mark_length, stored.mark_digest)
    if status.st_size >= stored.offset and mark.found_in(fd, status.st_size):
        return Resumption(known, stored.replay_from, stored.offset, replaced=False)
    return Resumption(known.successor(), 0, 0, replaced=True, same_start=True)
