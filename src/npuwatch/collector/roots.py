"""The folders the agent follows: the configured roots, or the places CANN writes its logs.

CANN writes host logs under $ASCEND_PROCESS_LOG_PATH when it is set, else under ~/ascend/log of
the user that runs the job, and slogd keeps device logs in /var/log/npu/slog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from npuwatch.config import SourcesSection

DEVICE_LOG_ROOT = Path("/var/log/npu/slog")


def home_from_passwd(user: str) -> Path | None:
    """The home folder of `user` from the password database, or None for an unknown user."""
    # pwd exists only on Unix; importing it here keeps the offline commands working elsewhere.
    import pwd  # noqa: PLC0415

    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return None


def discover_roots(
    sources: SourcesSection,
    environ: Mapping[str, str],
    home_of: Callable[[str], Path | None] = home_from_passwd,
    exists: Callable[[Path], bool] = Path.is_dir,
) -> list[Path]:
    """The log roots to follow, in order and without duplicates.

    Configured roots are returned as given, whether they exist yet or not (the rescan picks
    them up when they appear). Without any: $ASCEND_PROCESS_LOG_PATH, each user's
    ~/ascend/log, and /var/log/npu/slog, keeping those that are folders now.
    """
    if sources.roots:
        return list(dict.fromkeys(sources.roots))
    candidates: list[Path] = []
    explicit = environ.get("ASCEND_PROCESS_LOG_PATH")
    if explicit:
        candidates.append(Path(explicit))
    for user in sources.users:
        home = home_of(user)
        if home is not None:
            candidates.append(home / "ascend" / "log")
    candidates.append(DEVICE_LOG_ROOT)
    return [root for root in dict.fromkeys(candidates) if exists(root)]
