"""Golden files, and the one way to rewrite them: NPUWATCH_UPDATE_GOLDEN=1.

A rewritten golden file says nothing until its diff is reviewed, so a test that rewrote one is
skipped, not passed; and the variable is refused where CI is set, where a rewrite would make
every golden test pass whatever the output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

UPDATE = "NPUWATCH_UPDATE_GOLDEN"


def golden_text(path: Path, actual: str) -> str:
    """The golden text of `path` to compare `actual` with (rewritten first in update mode)."""
    if os.environ.get(UPDATE):
        if os.environ.get("CI"):
            pytest.fail(f"{UPDATE} is refused when CI is set: a rewrite passes any output")
        before = path.read_text("utf-8") if path.exists() else None
        if before != actual:
            path.write_text(actual, "utf-8")
            pytest.skip(f"rewrote {path.name}: review its diff, then run again without {UPDATE}")
    return path.read_text("utf-8")
