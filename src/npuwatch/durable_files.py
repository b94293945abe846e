"""Files written so that a crash leaves either the old content or the new one.

The data is written and synced before it takes the file's place, and the folder is synced
after, so that the rename itself survives a power loss. The agent's state files (cursors, runs
imported) are replaced whole this way; the baseline archive writes a whole folder of files
synced, then renames it into place.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from npuwatch.private_files import create_new_private


def write_synced(path: Path, data: bytes) -> None:
    """Write `data` to a new file at `path` (its folder made when missing) and sync it; a file
    or a link already there is an error (FileExistsError), never followed or overwritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o644), "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def sync_folder(folder: Path) -> None:
    """Make the names in `folder` (a rename, a new file) survive a power loss."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (mode 0600) so that a crash leaves either the old or the new
    content: temp file, fsync, rename, fsync the folder.

    The temporary file has a name no one could guess, made with O_EXCL | O_NOFOLLOW: a link
    planted beside `path` is never written through, and the rename replaces a link at `path`
    itself, not what it names.

    Raises OSError when the disk refuses (full, read-only); the temp file is removed then, so a
    full disk leaves nothing behind but the old file."""
    temporary: Path | None = None
    try:
        descriptor, temporary = create_new_private(path.parent, f".{path.name}.")
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(path)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                temporary.unlink()
        raise
    sync_folder(path.parent)
