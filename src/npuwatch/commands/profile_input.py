"""The profile folder a command was given, read into runs, or one error line and exit 2.

`profile summary` and `baseline add|compare` take the same argument and fail the same ways.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.commands.outcome import fail
from npuwatch.terminal import ProgressLine

if TYPE_CHECKING:
    from npuwatch.parsers.profiling import ProfileRun

WHAT_TO_GIVE = (
    "give an msprof PROF_* folder, a torch_npu *_ascend_pt folder, or the folder that holds "
    "the runs of several ranks"
)


def read_profile_folder(root: Path) -> list[ProfileRun]:
    """Every run under `root` (a progress line on a terminal while reading); never empty."""
    from npuwatch.parsers.profiling.run import load_profiles  # noqa: PLC0415 - pandas

    if not root.exists():
        fail(f"profile folder {root} does not exist: {WHAT_TO_GIVE}")
    if not root.is_dir():
        fail(f"{root} is a file: {WHAT_TO_GIVE}")
    if not os.access(root, os.R_OK | os.X_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns the profile)")
    progress = ProgressLine(sys.stderr, "reading profiles")
    try:
        runs = load_profiles(root, progress=progress.update)
    finally:
        progress.close()
    if not runs:
        fail(
            f"no profiling run in {root}: expected PROF_*/mindstudio_profiler_output "
            "(msprof --export=on) or *_ascend_pt/ASCEND_PROFILER_OUTPUT (torch_npu profiler)"
        )
    return runs
