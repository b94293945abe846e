"""One agent per state directory.

Two agents on one state directory (the service, and one started by hand to try something)
would each journal every line of the same files, and overwrite each other's cursors: every
line twice, and positions that go back. So an agent holds an exclusive lock on `agent.lock`
in its state directory for as long as it runs, with its pid in the file, and a second agent
refuses to start, naming that pid. The lock is the kernel's (flock): it goes with the process,
however the process ends (a `kill -9` leaves no stale lock to clean up).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from npuwatch.private_files import create_private

LOCK_NAME = "agent.lock"


class StateDirectoryBusy(OSError):
    """Another process holds the state directory's lock."""

    def __init__(self, folder: Path, holder: int | None) -> None:
        who = f"pid {holder}" if holder is not None else "a process whose pid it did not write"
        super().__init__(
            f"the state directory {folder} is in use by another npuwatch agent ({who}): stop "
            "that one first (systemctl stop npuwatch-agent), or give this one a state "
            "directory of its own (--state-directory)"
        )
        self.holder = holder


class StateLock:
    """The held lock; `release` (or the process's end) lets the next agent start."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # (closing the file lets the lock go)
            self._descriptor = None

    def __del__(self) -> None:  # an agent that failed to start lets it go with its object
        self.release()


def hold_state_directory(folder: Path) -> StateLock:
    """The state directory's lock, taken without waiting; StateDirectoryBusy when another
    process holds it. The file is npuwatch's own (never through a link, 0600)."""
    path = folder / LOCK_NAME
    descriptor = create_private(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _pid_in(descriptor)
        os.close(descriptor)
        raise StateDirectoryBusy(folder, holder) from None
    except BaseException:
        os.close(descriptor)
        raise
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the lock holds without the pid, which only names the holder
        pass
    return StateLock(descriptor)


def _pid_in(descriptor: int) -> int | None:
    try:
        written = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(written) if written.isdigit() and len(written) < 11 else None
