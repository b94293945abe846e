"""Whether a scanned folder is one host's log tree or a collection of hosts, one folder each.

People gather the logs of a failed job into one folder per host (`job42/host-a/...`), and
MindCluster FaultDiag wants the same (`worker-0/`, `worker-1/`, or `host1-192.168.x.x/`, each
holding that node's collection directory). Nothing in such a folder says "I am a host", but CANN
and the tools around it name their own folders, so the rule is the converse: a folder is a
collection when it has sub-folders and none of them is a folder CANN, asys or FaultDiag would
write or ask for (formats doc §5, ascend_fd.md §2). Then each first-level folder is a host named
after the folder, and files directly in the root belong to no host. One known folder is enough
to make the tree a single host: a host's folder often holds other things beside its logs
(`job/`, `ascend/` in the fixtures), and taking `debug/` for a host would be worse than taking a
whole collection for one host.

`host-<n>` is CANN's own only in the old `slog/host-0/host-0_<ts>.log` layout, and it is also how
people name hosts; so it counts as CANN's only when it holds such files itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path

CANN_FOLDERS = frozenset(
    {
        # Host logs (§5.1): the root's parts, its parents, the old slog layout, atrace.
        "ascend",
        "log",
        "debug",
        "run",
        "security",
        "plog",
        "slog",
        "hisi_logs",
        "atrace",
        # Device logs (§5.2) and the asys collection layout.
        "device-os",
        "event",
        "slogd",
        "dfx",
        "device",
        "host",
        "cann",
        "driver",
        "install",
        "message",
        "application",
        "firmware",
        "system",
        # One node's FaultDiag collection directory (ascend_fd.md §2), BMC dumps included.
        "process_log",
        "device_log",
        "dl_log",
        "crash",
        "mindie",
        "amct_log",
        "bus_log",
        "environment_check",
        "dump_info",
        "frudata",
        "chassis",
        # The debugging tools' own output folders, kept beside the logs of the job they checked.
        "mindstudio_sanitizer_log",
        "monitor_output",
        "anomaly_detected",
    }
)
"""Folder names that CANN or its tools give to folders of one host's logs."""

CANN_FOLDER_PATTERN = re.compile(
    r"(?:device|device-os|dev-os|device-app)-\d+|info_\d{14}|opprof_\d{14}_[a-z]{16}"
)
"""Numbered CANN folders: `device-0`, `device-os-0`, `dev-os-0`, `device-app-<pid>`; and the
timestamped output folders of msaicerr (`info_<time>`) and msOpProf (`OPPROF_<time>_<16 letters>`,
compared in lower case)."""

_OLD_HOST_FOLDER = re.compile(r"host-\d+")


class HostOnCollection(ValueError):
    """`--host` was given for a collection, whose hosts are named by their folders."""

    def __init__(self, root: Path) -> None:
        super().__init__(
            f"{root} is a collection of hosts (one folder each), and the folder names are "
            "the host names: leave out --host, which names the host of a single log tree"
        )


def is_cann_folder(folder: Path) -> bool:
    """Whether `folder` is one that CANN, asys or FaultDiag names, not a host's."""
    name = folder.name.lower()
    if name in CANN_FOLDERS or CANN_FOLDER_PATTERN.fullmatch(name):
        return True
    if _OLD_HOST_FOLDER.fullmatch(name):  # its files are `host-0_<ts>.log`
        return any(folder.glob(f"{folder.name}_*"))
    return False


_WRAPPERS_FOLLOWED = 8
"""How many nested wrapper folders (`job/0318/…`) are looked through for the host folders."""


def collection_base(root: Path) -> Path:
    """The folder whose sub-folders are the hosts: `root`, or the folder that a chain of
    wrapper folders leads to (a folder holding nothing but one folder that is not CANN's:
    `case/0318/{1,2}/…` has the hosts 1 and 2, not one host 0318)."""
    base = root
    for _ in range(_WRAPPERS_FOLLOWED):
        try:
            with os.scandir(base) as entries:
                shown = [entry for entry in entries if not entry.name.startswith(".")]
        except OSError:
            return base
        if len(shown) != 1 or not shown[0].is_dir(follow_symlinks=False):
            return base
        inner = base / shown[0].name
        if is_cann_folder(inner) or collection_hosts_at(inner) is None:
            return base
        base = inner
    return base


def collection_hosts(root: Path) -> list[str] | None:
    """The host names of a collection (the folders of its base, in natural order), or None
    when `root` is one host's tree or a file. Links to folders are not hosts: the walk does
    not follow them."""
    return collection_hosts_at(collection_base(root))


def collection_hosts_at(folder: Path) -> list[str] | None:
    """The first-level folders of `folder` when they are hosts, else None."""
    try:
        with os.scandir(folder) as entries:
            folders = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:  # a file, or unreadable: the walk says what is wrong
        return None
    if not folders or any(is_cann_folder(folder / name) for name in folders):
        return None
    return sorted(folders, key=natural_order)


def host_of(base: Path, path: Path, hosts: Collection[str]) -> str | None:
    """The host of a file under a collection's `base` (collection_base): its first-level
    folder there, if any."""
    try:
        parts = path.relative_to(base).parts
    except ValueError:  # beside the wrapper folders: no host's
        return None
    return parts[0] if len(parts) > 1 and parts[0] in hosts else None


def natural_order(name: str) -> list[tuple[int, int | str]]:
    """`worker-2` before `worker-10`."""
    return [
        (0, int(piece)) if piece.isdigit() else (1, piece) for piece in re.split(r"(\d+)", name)
    ]
