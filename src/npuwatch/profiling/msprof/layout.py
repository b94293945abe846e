"""Where a profiling run keeps its files: finding runs in a folder and the files of each kind.

Two layouts (formats doc §1):

- msprof `PROF_*`: `mindstudio_profiler_output/<kind>_<timestamp>[_slice_<n>].csv|json` since
  CANN 7.0; older exports write `device_<N>/summary/<kind>_<device>_<model>[_<iter>].csv`. The
  newer folder wins kind by kind, and within it the newest export (re-exports add files with a
  later timestamp); all slices of that export are read.
- torch_npu `*_ascend_pt`: `ASCEND_PROFILER_OUTPUT/kernel_details.csv`, `step_trace_time.csv`,
  `communication.json`, `trace_view.json`, `op_statistic.csv` ... (no timestamp suffix), with
  an inner `PROF_*` that fills in what ASCEND_PROFILER_OUTPUT lacks (npu_mem, task_time, or the
  kernels themselves when torch_npu exported no kernel_details).

No pandas and no parsing here: the agent uses this module to notice runs and their completion.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.bounded_numbers import fitting_int
from npuwatch.tree_walk import walk_folders

TORCH_OUTPUT = "ASCEND_PROFILER_OUTPUT"
MSPROF_OUTPUT = "mindstudio_profiler_output"
DONE_MARKER = "analyse.done"
TORCH_LAYOUT = "torch_npu"
MSPROF_LAYOUT = "msprof"

# The kinds of file a run may hold (keys of RunFiles.files).
KERNELS = "kernels"
OP_STATISTIC = "op_statistic"
API_STATISTIC = "api_statistic"
TASK_TIME = "task_time"
NPU_MEM = "npu_mem"
COMMUNICATION_STATISTIC = "communication_statistic"
MSPROF_STEP_TRACE = "msprof_step_trace"
STEP_TRACE = "step_trace"
COMMUNICATION = "communication"
TRACE = "trace"
OPERATOR_DETAILS = "operator_details"

_MSPROF_KINDS = {
    "op_summary": KERNELS,
    "op_statistic": OP_STATISTIC,
    "api_statistic": API_STATISTIC,
    "task_time": TASK_TIME,
    "npu_mem": NPU_MEM,
    "communication_statistic": COMMUNICATION_STATISTIC,
    "hccl_statistic": COMMUNICATION_STATISTIC,
    "step_trace": MSPROF_STEP_TRACE,
}
_TORCH_FILES = {
    "kernel_details.csv": KERNELS,
    "op_statistic.csv": OP_STATISTIC,
    "api_statistic.csv": API_STATISTIC,
    "step_trace_time.csv": STEP_TRACE,
    "communication.json": COMMUNICATION,
    "trace_view.json": TRACE,
    "operator_details.csv": OPERATOR_DETAILS,
}
_EXPORT_NAME = re.compile(
    r"^(?P<kind>[a-z][a-z_]*?)(?P<numbers>(?:_\d+)+)(?:_slice_(?P<slice>\d+))?\.(?P<ext>csv|json)$"
)
_DEVICE_DIR = re.compile(r"^device_(\d+)$")


@dataclass(frozen=True)
class RunFiles:
    """The files of one run, by kind, in reading order (slices in order)."""

    root: Path
    layout: str
    files: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    metadata: tuple[Path, ...] = ()
    """profiler_info*.json and profiler_metadata.json."""
    unsupported: tuple[Path, ...] = ()
    """Summaries exported as JSON (`--summary-format=json`), which are not read."""
    complete: bool = False
    devices: tuple[int, ...] = ()
    """N of each `device_N` folder of the run's PROF_* folder(s)."""


def find_profile_runs(root: Path) -> list[Path]:
    """Every run at or below `root`: `*_ascend_pt` folders and `PROF_*` folders not inside one.

    `root` may itself be a run, or its ASCEND_PROFILER_OUTPUT or mindstudio_profiler_output.
    """
    itself = run_root(root)
    if itself is not None:
        return [itself]
    runs: list[Path] = []
    for folder, names, _ in walk_folders(str(root)):
        here = Path(folder)
        descend = []
        for name in sorted(names):
            if _looks_like_run(here / name):
                runs.append(here / name)
            else:
                descend.append(name)
        names[:] = descend
    return sorted(runs)


def run_root(path: Path) -> Path | None:
    """The run folder `path` stands for, or None when it is not (inside) a run's top."""
    if path.name in (TORCH_OUTPUT, MSPROF_OUTPUT) and path.is_dir():
        return path.parent
    return path if _looks_like_run(path) else None


def is_run_complete(path: Path) -> bool:
    """True once the tool has finished writing: torch_npu's `analyse.done` is there, or (msprof)
    an op_summary has been exported. Whether files are still changing is the caller's check."""
    run = run_root(path) or path
    if _is_torch_run(run):
        return (run / TORCH_OUTPUT / DONE_MARKER).is_file()
    return KERNELS in _msprof_files(run)[0]


def run_files(run: Path) -> RunFiles:
    """The files of each kind that one run holds."""
    if _is_torch_run(run):
        return _torch_run_files(run)
    files, unsupported = _msprof_files(run)
    complete = KERNELS in files
    return RunFiles(run, MSPROF_LAYOUT, files, (), tuple(unsupported), complete, _devices([run]))


def _torch_run_files(run: Path) -> RunFiles:
    output = run / TORCH_OUTPUT
    inner: dict[str, list[Path]] = {}
    unsupported: list[Path] = []
    profs = sorted(path for path in run.glob("PROF_*") if path.is_dir())
    for prof in profs:
        prof_files, prof_unsupported = _msprof_files(prof)
        unsupported += prof_unsupported
        for kind, paths in prof_files.items():
            inner.setdefault(kind, []).extend(paths)
    files = {kind: tuple(paths) for kind, paths in inner.items()}
    for name, kind in _TORCH_FILES.items():
        if (output / name).is_file():
            files[kind] = (output / name,)
    metadata = sorted(run.glob("profiler_info*.json")) + sorted(run.glob("profiler_metadata.json"))
    complete = (output / DONE_MARKER).is_file()
    return RunFiles(
        run, TORCH_LAYOUT, files, tuple(metadata), tuple(unsupported), complete, _devices(profs)
    )


def device_of_path(path: Path) -> int | None:
    """N of the innermost `device_N` folder on the path (old msprof summaries), else None."""
    for part in reversed(path.parts):
        match = _DEVICE_DIR.match(part)
        if match:
            return fitting_int(match[1])  # None past 64 bits: no device is numbered so
    return None


def _devices(profs: list[Path]) -> tuple[int, ...]:
    numbers = {
        number
        for prof in profs
        for folder in prof.glob("device_*")
        if (match := _DEVICE_DIR.match(folder.name))
        and folder.is_dir()
        and (number := fitting_int(match[1])) is not None
    }
    return tuple(sorted(numbers))


def _looks_like_run(path: Path) -> bool:
    if not path.is_dir():
        return False
    return _is_torch_run(path) or path.name.startswith("PROF_") or (path / MSPROF_OUTPUT).is_dir()


def _is_torch_run(path: Path) -> bool:
    return path.name.endswith("_ascend_pt") or (path / TORCH_OUTPUT).is_dir()


def _msprof_files(prof: Path) -> tuple[dict[str, tuple[Path, ...]], list[Path]]:
    """Kind → files of one PROF_* folder: mindstudio_profiler_output first, summary folders for
    the kinds it lacks."""
    newest, unsupported = _exports(_listing(prof / MSPROF_OUTPUT), newest_only=True)
    summaries = [*sorted(prof.glob("device_*/summary")), prof / "summary"]
    older, older_unsupported = _exports(
        (path for folder in summaries for path in _listing(folder)), newest_only=False
    )
    files = {**older, **newest}
    return files, unsupported + older_unsupported


def _exports(
    paths: Iterable[Path], *, newest_only: bool
) -> tuple[dict[str, tuple[Path, ...]], list[Path]]:
    found: dict[str, list[tuple[tuple[int, ...], int, Path]]] = {}
    unsupported: list[Path] = []
    for path in paths:
        match = _EXPORT_NAME.match(path.name)
        if match is None:
            continue
        if match["kind"] == "msprof" and match["ext"] == "json":
            kind = TRACE
        elif match["kind"] in _MSPROF_KINDS:
            if match["ext"] == "json":
                if match["kind"] != "step_trace":  # step_trace_*.json is a timeline
                    unsupported.append(path)
                continue
            kind = _MSPROF_KINDS[match["kind"]]
        else:
            continue
        numbers = tuple(int(n) for n in match["numbers"].strip("_").split("_"))
        found.setdefault(kind, []).append((numbers, int(match["slice"] or 0), path))
    files: dict[str, tuple[Path, ...]] = {}
    for kind, entries in found.items():
        entries.sort(key=lambda entry: (entry[0], entry[1], str(entry[2])))
        if newest_only:
            newest = entries[-1][0]
            entries = [entry for entry in entries if entry[0] == newest]
        files[kind] = tuple(path for _, _, path in entries)
    return files, unsupported


def _listing(folder: Path) -> list[Path]:
    try:
        return sorted(entry for entry in folder.iterdir() if entry.is_file())
    except OSError:
        return []
