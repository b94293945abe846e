"""Where CANN writes its logs: the one place npuwatch knows it (formats doc §5.1).

Host logs go under $ASCEND_PROCESS_LOG_PATH when it is set, else under $ASCEND_WORK_PATH/log,
else under ~/ascend/log of the user that runs the job; slogd keeps device logs in
/var/log/npu/slog. `scan`, `doctor` and the agent all look here first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROCESS_LOG_PATH = "ASCEND_PROCESS_LOG_PATH"
WORK_PATH = "ASCEND_WORK_PATH"
DEVICE_LOG_ROOT = Path("/var/log/npu/slog")
"""Where slogd writes the device logs it pulls from the NPUs."""


@dataclass(frozen=True)
class HostLogRoot:
    """The folder CANN writes host logs to, and what named it (for messages)."""

    path: Path | None
    named_by: str
    """`$ASCEND_PROCESS_LOG_PATH`, `$ASCEND_WORK_PATH`, `~/ascend/log`, or `no HOME`."""


def named_log_root(environ: Mapping[str, str]) -> HostLogRoot | None:
    """The folder an environment variable of CANN names, or None when neither is set."""
    for variable, below in ((PROCESS_LOG_PATH, ""), (WORK_PATH, "log")):
        value = environ.get(variable, "").strip()
        if value:
            return HostLogRoot(Path(value) / below if below else Path(value), f"${variable}")
    return None


def user_log_root(home: Path) -> Path:
    """The host log folder of a user who sets none of CANN's variables."""
    return home / "ascend" / "log"


def host_log_root(environ: Mapping[str, str], home: Path | None) -> HostLogRoot:
    """Where CANN writes this environment's host logs."""
    named = named_log_root(environ)
    if named is not None:
        return named
    if home is not None:
        return HostLogRoot(user_log_root(home), "~/ascend/log")
    return HostLogRoot(None, "no HOME")
