"""A real full disk for the tests: a 1 MiB tmpfs, mounted for one test (they run as root, as CI
does), and a file that takes every byte left on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(mount_point: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `mount_point` (created), unmounted afterwards."""
    mount_point.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.fail("no mount command: CI installs util-linux (the test needs a real full disk)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs here (run the tests as root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        unmounted = subprocess.run(["umount", str(mount_point)], capture_output=True, check=False)
        if unmounted.returncode != 0:  # something still open: detach it now, free it later
            subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def fill(directory: Path) -> Path:
    """Write a file until the file system has no byte left; the file."""
    filler = directory / "filler"
    handle = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(handle, b"\xa5" * 4096)
    except OSError as error:
        assert error.errno == 28, error  # ENOSPC
    finally:
        os.close(handle)
    return filler
