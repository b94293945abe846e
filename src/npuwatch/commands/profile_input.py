"""The profile folder a command was given, read into runs, or one error line and exit 2.

`profile summary` and `baseline add|compare` take the same argument and fail the same ways. An
msOpProf result (OPPROF_*, or a folder holding some) is told apart from msprof and torch_npu
runs by its name, before those are looked for.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.commands.outcome import fail
from npuwatch.profiling.opprof.read import is_opprof_folder, load_opprof
from npuwatch.terminal import ProgressLine

if TYPE_CHECKING:
    from npuwatch.profiling.msprof.run import ProfileRun
    from npuwatch.profiling.opprof.read import OpProfRun

WHAT_TO_GIVE = (
    "give an msprof PROF_* folder, a torch_npu *_ascend_pt folder, an msOpProf OPPROF_* "
    "folder, or the folder that holds the runs of several ranks"
)


def is_opprof_input(root: Path) -> bool:
    """Whether `root` is msOpProf output (an OPPROF_* folder or a folder holding some)."""
    return is_opprof_folder(root)


def read_opprof_folder(root: Path) -> list[OpProfRun]:
    """Every OPPROF run at `root`, or exit 2 when none has a launch."""
    _check_folder(root)
    runs = load_opprof(root)
    if not any(run.launches for run in runs):
        first = next((problem for run in runs for problem in run.problems), "no OPPROF_* folder")
        fail(
            f"no operator launch in {root} ({first}): give the OPPROF_* folder msprof op wrote, "
            "with OpBasicInfo.csv and the metric CSVs"
        )
    return runs


def read_profile_folder(root: Path) -> list[ProfileRun]:
    """Every run under `root` (a progress line on a terminal while reading); never empty."""
    from npuwatch.profiling.msprof.run import load_profiles  # noqa: PLC0415 - pandas

    _check_folder(root)
    progress = ProgressLine(sys.stderr, "reading profiles")
    try:
        runs = load_profiles(root, progress=progress.update)
    finally:
        progress.close()
    if not runs:
        fail(
            f"no profiling run in {root}: expected PROF_*/mindstudio_profiler_output "
            "(msprof --export=on), *_ascend_pt/ASCEND_PROFILER_OUTPUT (torch_npu profiler) "
            "or OPPROF_* (msprof op)"
        )
    return runs


def _check_folder(root: Path) -> None:
    """Exit 2 unless `root` is a folder this user may read."""
    if not root.exists():
        fail(f"profile folder {root} does not exist: {WHAT_TO_GIVE}")
    if not root.is_dir():
        fail(f"{root} is a file: {WHAT_TO_GIVE}")
    if not os.access(root, os.R_OK | os.X_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns the profile)")
