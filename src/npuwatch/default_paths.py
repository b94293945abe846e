"""Where npuwatch keeps things on a host unless told otherwise: the one home of these paths.

Plain constants, so that the commands that must start fast (`grep`, `doctor`) read them without
loading the configuration's models.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CONFIG_PATH = Path("/etc/npuwatch/npuwatch.toml")
CONFIG_PATH_VARIABLE = "NPUWATCH_CONFIG"
"""The environment variable that names another configuration file."""
SYSTEM_RULES = Path("/etc/npuwatch/rules.d")
"""The site's rule packs, loaded after npuwatch's own."""
STATE_DIRECTORY = Path("/var/lib/npuwatch")
JOURNAL_FOLDER = "journal"
"""The journal's folder under the state directory."""
SYSTEM_ARCHIVE = STATE_DIRECTORY / "archive"
"""The baseline archive shared by the users of a host."""
CACHE_VARIABLE = "NPUWATCH_CACHE"
"""The environment variable that names the folder of npuwatch's caches; empty turns them off."""


def cache_folder(environment: Mapping[str, str] = os.environ) -> Path | None:
    """Where a command keeps what it may compute again (the rule cache): $NPUWATCH_CACHE, else
    $XDG_CACHE_HOME/npuwatch, else ~/.cache/npuwatch; None when caching is off or there is no
    home to keep it in."""
    chosen = environment.get(CACHE_VARIABLE)
    if chosen is not None:
        return Path(chosen) if chosen else None
    if environment.get("XDG_CACHE_HOME"):
        return Path(environment["XDG_CACHE_HOME"]) / "npuwatch"
    if environment.get("HOME"):
        return Path(environment["HOME"]) / ".cache" / "npuwatch"
    return None
