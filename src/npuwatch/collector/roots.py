"""The folders the agent follows: the configured roots, or the places CANN writes its logs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from npuwatch.cann_roots import DEVICE_LOG_ROOT, named_log_root, user_log_root


class RootChoice(Protocol):
    """What the configuration says of the roots (its [sources] section)."""

    @property
    def roots(self) -> Sequence[Path]: ...

    @property
    def users(self) -> Sequence[str]: ...


def home_from_passwd(user: str) -> Path | None:
    """The home folder of `user` from the password database, or None for an unknown user."""
    # pwd exists only on Unix; importing it here keeps the offline commands working elsewhere.
    import pwd  # noqa: PLC0415

    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return None


def discover_roots(
    sources: RootChoice,
    environ: Mapping[str, str],
    home_of: Callable[[str], Path | None] = home_from_passwd,
    exists: Callable[[Path], bool] = Path.is_dir,
) -> list[Path]:
    """The log roots to follow, in order and without duplicates.

    Configured roots are returned as given, whether they exist yet or not (the rescan picks
    them up when they appear). Without any: the folder $ASCEND_PROCESS_LOG_PATH or
    $ASCEND_WORK_PATH names, each user's ~/ascend/log, and /var/log/npu/slog, keeping those
    that are folders now (the same places `scan` and `doctor` look, see cann_roots.py).
    """
    if sources.roots:
        return list(dict.fromkeys(sources.roots))
    candidates: list[Path] = []
    named = named_log_root(environ)
    if named is not None and named.path is not None:
        candidates.append(named.path)
    for user in sources.users:
        home = home_of(user)
        if home is not None:
            candidates.append(user_log_root(home))
    candidates.append(DEVICE_LOG_ROOT)
    return [root for root in dict.fromkeys(candidates) if exists(root)]


def missing_roots(roots: Sequence[Path]) -> list[Path]:
    """The roots named explicitly (sources.roots, `agent --root`) that are not folders now. Not
    a refusal for the agent, which follows a root once it appears (a job may not have made it
    yet); but a typo would have it follow nothing, and say nothing."""
    return [root for root in dict.fromkeys(roots) if not root.is_dir()]
