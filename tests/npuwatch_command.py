"""`npuwatch` run in a process of its own, as a user runs it, for the tests of what it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without NPUWATCH_* settings (a developer's own would change
    what the command does), no colours, and `extra`."""
    environment = {k: v for k, v in os.environ.items() if not k.upper().startswith("NPUWATCH_")}
    return {**environment, "NO_COLOR": "1", **extra}


def run_npuwatch(
    *args: str,
    stdin: str | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m npuwatch ARGS…`; its exit code, stdout and stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "npuwatch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(env) if env is not None else clean_environment(),
        timeout=timeout,
        check=False,
    )
