"""Where npuwatch keeps things on a host unless told otherwise: the one home of these paths.

Plain constants, so that the commands that must start fast (`grep`, `doctor`) read them without
loading the configuration's models.
"""

from __future__ import annotations

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
