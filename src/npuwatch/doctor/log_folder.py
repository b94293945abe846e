"""The log folder CANN writes to: how big it is, how fast it grows, and the disk it fills.

Growth is measured as the bytes written between two looks at the folder, file by file, so that
CANN deleting its oldest files during the interval does not hide what was written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from npuwatch.cann_roots import host_log_root
from npuwatch.doctor.host import DoctorOptions, Host
from npuwatch.doctor.report import Check, Status
from npuwatch.doctor.wording import count_of, human_age, human_bytes, human_rate
from npuwatch.tree_walk import walk_folders

FAST_GROWTH_BYTES_PER_S = 1 << 20
"""Faster than this is a DEBUG or INFO level left on (ERROR logging writes far less)."""

LOW_FREE_RATIO = 0.10


@dataclass(frozen=True)
class LogFolderLocation:
    path: Path | None
    named_by: str


def log_folder_location(host: Host, explicit: Path | None) -> LogFolderLocation:
    """Where CANN writes host logs (cann_roots.py), unless the user named a folder."""
    if explicit is not None:
        return LogFolderLocation(explicit, "--log-dir")
    root = host_log_root(host.environ, host.home)
    return LogFolderLocation(root.path, root.named_by)


@dataclass(frozen=True)
class FolderSnapshot:
    """The size of every file under a folder, and when the newest was last written."""

    sizes: dict[str, int]
    newest_mtime: float | None

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())


def snapshot(folder: Path) -> FolderSnapshot:
    """Every regular file under `folder`; files that vanish while being looked at are skipped."""
    sizes: dict[str, int] = {}
    newest: float | None = None
    for parent, _, names in walk_folders(str(folder)):
        for name in names:
            path = os.path.join(parent, name)  # noqa: PTH118 - os.walk gives strings; fast path
            try:
                status = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(status.st_mode):
                continue
            sizes[path] = status.st_size
            newest = status.st_mtime if newest is None else max(newest, status.st_mtime)
    return FolderSnapshot(sizes, newest)


def written_bytes(before: FolderSnapshot, after: FolderSnapshot) -> int:
    """Bytes written between two snapshots: growth of files seen twice, plus new files."""
    return sum(max(0, size - before.sizes.get(path, 0)) for path, size in after.sizes.items())


def log_folder_check(host: Host, options: DoctorOptions) -> Check:
    location = log_folder_location(host, options.log_dir)
    folder = location.path
    facts: dict[str, object] = {
        "path": str(folder) if folder else None,
        "named_by": location.named_by,
    }

    def check(status: Status, detail: str, action: str | None = None) -> Check:
        return Check("log.folder", "logs", "log folder", status, detail, action, facts)

    if folder is None:
        return check("absent", "no HOME and no ASCEND_PROCESS_LOG_PATH: no log folder to look at")
    try:
        mode = folder.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return check(
            "absent", f"no log folder at {folder} yet (CANN creates it when a job first logs)"
        )
    except OSError as error:
        return check(
            "warn",
            f"cannot look at {folder}: {error.strerror}",
            "run doctor as the user that runs the jobs (or as root)",
        )
    if not stat.S_ISDIR(mode):
        return check(
            "fail",
            f"{folder} is not a folder: CANN cannot write its logs there",
            "remove it, or point ASCEND_PROCESS_LOG_PATH at a folder",
        )
    first = snapshot(folder)
    started = host.monotonic()
    rate: float | None = None
    last = first
    if options.sample_seconds > 0:
        host.sleep(options.sample_seconds)
        last = snapshot(folder)
        elapsed = max(host.monotonic() - started, 1e-6)
        written = written_bytes(first, last)
        rate = written / elapsed
        facts.update(written_bytes=written, sample_seconds=round(elapsed, 3))
    try:
        total, free = host.disk_space(folder)
    except OSError:
        total, free = 0, None
    age = None if last.newest_mtime is None else max(0.0, host.now() - last.newest_mtime)
    facts.update(
        bytes=last.total_bytes,
        files=len(last.sizes),
        bytes_per_second=None if rate is None else round(rate, 1),
        newest_file_age_seconds=None if age is None else round(age, 1),
        disk_total_bytes=total,
        disk_free_bytes=free,
    )
    parts = [f"{folder}: {human_bytes(last.total_bytes)} in {count_of(len(last.sizes), 'file')}"]
    parts.append("growth not sampled" if rate is None else f"growing {human_rate(rate)}")
    parts.append("no file yet" if age is None else f"newest file written {human_age(age)} ago")
    if free is not None:
        parts.append(f"{human_bytes(free)} free on its disk")
    detail = ", ".join(parts)
    if rate is not None and rate >= FAST_GROWTH_BYTES_PER_S:
        per_day = human_bytes(rate * 86_400)
        return check(
            "warn",
            f"{detail} (~{per_day} a day)",
            "lower ASCEND_GLOBAL_LOG_LEVEL to 3 (ERROR) unless you are investigating, "
            "and clean old plog files (CANN deletes only each process's own oldest files)",
        )
    if total and free is not None and free / total < LOW_FREE_RATIO:
        return check(
            "warn",
            f"{detail}: the disk is {100 - 100 * free / total:.0f}% full",
            f"free space: delete old plog/device files under {folder}, or move the logs with "
            "ASCEND_PROCESS_LOG_PATH to a bigger disk",
        )
    return check("ok", detail)
