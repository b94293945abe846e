"""Profiling runs under the configured folders, as outputs the tracker imports once finished.

A run is finished when it carries torch_npu's `analyse.done` marker, or when none of its files
has changed for `settle` seconds (collector/finished_outputs.py, which keeps the runs imported,
so that a restart imports nothing twice and a run profiled anew into the same folder is
imported again).
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.collector.finished_outputs import ImportedOutputs, Output, OutputTracker
from npuwatch.profiling.msprof.layout import DONE_MARKER, TORCH_OUTPUT, find_profile_runs

PROFILING = "profiling"


def find_runs(root: Path) -> list[Output]:
    """Every profiling run at or under `root` (msprof's PROF_* and torch_npu's *_ascend_pt)."""
    return [Output(PROFILING, run) for run in find_profile_runs(root)]


def marked_complete(run: Path) -> bool:
    """Whether the profiler itself says the run is done: torch_npu writes `analyse.done` into
    ASCEND_PROFILER_OUTPUT once it has parsed the run (msprof writes no such marker)."""
    return (run / TORCH_OUTPUT / DONE_MARKER).is_file()


def run_tracker(state_file: Path, settle_s: float) -> OutputTracker:
    """The tracker of the runs under the configured folders, its list kept in `state_file`."""
    imported = ImportedOutputs(
        state_file,
        "imports again the runs imported since (their search-engine documents keep their ids; "
        "the journal holds their operators twice)",
        keep_gone=False,
        kind=PROFILING,
    )
    return OutputTracker(find_runs, imported, settle_s, marked=marked_complete)
