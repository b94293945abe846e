"""The machine doctor examines, as seams, and what the user asked it to look at.

Well-known locations (/usr/local/Ascend, /dev, /proc, /etc) are read under `Host.root`, so a
test builds a fake install tree under a temporary folder. Paths that come from the environment
or the command line are taken as they are written.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.collector.npu_smi_command import DEFAULT_COMMAND
from npuwatch.speedups import Speedups, speedups
from npuwatch.untrusted_files import read_file


def installed_version(distribution: str) -> str | None:
    """The version of an installed Python distribution, without importing it; None if absent."""
    # Imported here: importlib.metadata is the heaviest module doctor needs, and only this needs it.
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def disk_space(path: Path) -> tuple[int, int]:
    """Total and free bytes of the file system holding `path`."""
    usage = shutil.disk_usage(path)
    return usage.total, usage.free


def _host_name() -> str:
    return os.uname().nodename if hasattr(os, "uname") else "this host"


@dataclass(frozen=True)
class Host:
    """The environment, file system and clocks doctor reads, with production defaults."""

    environ: Mapping[str, str]
    root: Path = Path("/")
    python: str = sys.executable
    """The interpreter whose packages (torch, torch_npu) are reported."""
    host_name: str = field(default_factory=_host_name)
    package_version: Callable[[str], str | None] = installed_version
    disk_space: Callable[[Path], tuple[int, int]] = disk_space
    monotonic: Callable[[], float] = time.monotonic
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    speedups: Callable[[], Speedups] = speedups
    """Which of npuwatch's own C extensions load here."""

    def at(self, absolute: str) -> Path:
        """A well-known absolute path (`/usr/local/Ascend`), under the file system root."""
        return self.root / absolute.lstrip("/")

    def env_path(self, name: str) -> Path | None:
        """The path an environment variable names, or None when it is unset or empty."""
        value = self.environ.get(name, "").strip()
        return Path(value) if value else None

    @property
    def home(self) -> Path | None:
        return self.env_path("HOME")


@dataclass(frozen=True)
class DoctorOptions:
    """What the user asked doctor to look at (the command line's options)."""

    npu_smi: Sequence[str] = DEFAULT_COMMAND
    toolkit: Path | None = None
    """Look at this toolkit only, instead of searching the usual places."""
    log_dir: Path | None = None
    """Measure this folder instead of the one CANN would write to."""
    sample_seconds: float = 2.0
    """How long to watch the log folder grow; 0 skips the measurement."""
    npu_smi_timeout_s: float = 10.0


def is_dir(path: Path) -> bool:
    """Whether `path` is a folder; False, never an exception, when it cannot be looked at."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_file(path: Path) -> bool:
    """Whether `path` is a file; False, never an exception, when it cannot be looked at."""
    try:
        return path.is_file()
    except OSError:
        return False


def exists(path: Path) -> bool:
    """Whether anything is at `path`; False, never an exception, when it cannot be looked at."""
    try:
        return path.exists()
    except OSError:
        return False


SMALL_FILE_BYTES = 1 << 20
"""What doctor reads of a version or settings file at most."""


def read_text(path: Path) -> str | None:
    """The text of a small file, or None when it cannot be read (absent, a folder, no right,
    a FIFO, a link another user planted: untrusted_files)."""
    try:
        return read_file(path, limit=SMALL_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
