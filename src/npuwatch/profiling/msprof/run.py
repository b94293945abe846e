"""A profiling run as tables: `load_profile` for one run, `load_profiles` for a folder of ranks.

The only module of the package that reads files. Everything it could not read (a missing or
empty file, a malformed row, a JSON summary) becomes a line of `ProfileRun.problems`; nothing
raises except asking `load_profile` for a run where there is none (or several).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof import layout as kinds
from npuwatch.profiling.msprof.communication import parse_communication
from npuwatch.profiling.msprof.kernels import parse_kernels
from npuwatch.profiling.msprof.layout import RunFiles, device_of_path, find_profile_runs, run_files
from npuwatch.profiling.msprof.memory import parse_npu_mem
from npuwatch.profiling.msprof.metadata import parse_run_metadata
from npuwatch.profiling.msprof.operator_details import parse_operator_details
from npuwatch.profiling.msprof.statistics import (
    parse_api_statistic,
    parse_communication_statistic,
    parse_op_statistic,
)
from npuwatch.profiling.msprof.steps import parse_msprof_step_trace, parse_step_trace_time
from npuwatch.profiling.msprof.tables import ParsedTable
from npuwatch.profiling.msprof.task_time import parse_task_time
from npuwatch.profiling.msprof.trace import device_of_trace, parse_trace
from npuwatch.untrusted_files import read_file

Progress = Callable[[int, int, int], None]
"""Called after each file with (files done, files in all, bytes read)."""

_PARSERS: dict[str, Callable[[bytes, str], ParsedTable]] = {
    kinds.KERNELS: parse_kernels,
    kinds.OP_STATISTIC: parse_op_statistic,
    kinds.API_STATISTIC: parse_api_statistic,
    kinds.TASK_TIME: parse_task_time,
    kinds.NPU_MEM: parse_npu_mem,
    kinds.COMMUNICATION_STATISTIC: parse_communication_statistic,
    kinds.STEP_TRACE: parse_step_trace_time,
    kinds.MSPROF_STEP_TRACE: parse_msprof_step_trace,
    kinds.COMMUNICATION: parse_communication,
    kinds.TRACE: parse_trace,
    kinds.OPERATOR_DETAILS: parse_operator_details,
}


_PER_DEVICE = (
    "kernels",
    "op_statistic",
    "api_statistic",
    "step_trace",
    "communication_statistic",
    "npu_mem",
    "task_time",
)
"""The frames `split_by_device` divides (they have a device_id column)."""


class NoProfileError(ValueError):
    """`load_profile` was given a path that holds no run, or several."""


@dataclass(frozen=True, eq=False)
class ProfileRun:
    """One run of one rank or device, as DataFrames with the columns of `columns.py`.

    Frames are empty (with their canonical columns) when the run has no such file. `step_trace`
    is torch_npu's step_trace_time, or msprof's step_trace when that is all there is; both have
    `step_us`. `trace` is filled only when asked for (timelines are large).
    """

    source: Path
    layout: str
    """`torch_npu` (an *_ascend_pt folder) or `msprof` (a PROF_* folder)."""
    complete: bool
    """analyse.done present (torch_npu), or an op_summary exported (msprof)."""
    device_id: int | None
    rank: int | None
    cann_version: str | None
    torch_npu_version: str | None
    kernels: pd.DataFrame
    op_statistic: pd.DataFrame
    api_statistic: pd.DataFrame
    step_trace: pd.DataFrame
    communication: pd.DataFrame
    communication_statistic: pd.DataFrame
    npu_mem: pd.DataFrame
    task_time: pd.DataFrame
    operator_details: pd.DataFrame
    trace: pd.DataFrame
    problems: list[str] = field(default_factory=list)
    files: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    """The files read, by kind (`kernels`, `op_statistic`, `step_trace` ...)."""

    @property
    def label(self) -> str:
        """How a person names this run: `rank 3`, else `device 3`, else the folder name."""
        if self.rank is not None:
            return f"rank {self.rank}"
        if self.device_id is not None:
            return f"device {self.device_id}"
        return self.source.name

    @property
    def has_data(self) -> bool:
        """True when there is anything to summarise: kernels, an op_statistic or steps."""
        return not (self.kernels.empty and self.op_statistic.empty and self.step_trace.empty)


def load_profile(path: Path, *, with_trace: bool = False) -> ProfileRun:
    """The one run at `path`: a PROF_* folder, an *_ascend_pt folder, its ASCEND_PROFILER_OUTPUT,
    or a folder holding exactly one of these. Raises NoProfileError otherwise."""
    runs = find_profile_runs(path) if path.is_dir() else []
    if len(runs) != 1:
        found = "no profiling run" if not runs else f"{len(runs)} runs (use load_profiles)"
        raise NoProfileError(f"{path} holds {found}")
    return _load(run_files(runs[0]), with_trace, None)


def load_profiles(
    root: Path, *, with_trace: bool = False, progress: Progress | None = None
) -> list[ProfileRun]:
    """Every run at or below `root`, one ProfileRun per rank or device: a run whose kernels come
    from several devices is split by device. Empty when `root` holds no run."""
    layouts = [run_files(run) for run in find_profile_runs(root)] if root.is_dir() else []
    counter = _Counter(sum(_file_count(files, with_trace) for files in layouts), progress)
    runs: list[ProfileRun] = []
    for files in layouts:
        runs += split_by_device(_load(files, with_trace, counter))
    return runs


def split_by_device(run: ProfileRun) -> list[ProfileRun]:
    """One run per device of its kernels. Rows without a device (host rows of api_statistic),
    frames without device ids and the problems stay with the first device, so that nothing
    counts twice."""
    devices = sorted(int(d) for d in run.kernels[c.DEVICE_ID].dropna().unique())
    if len(devices) < 2:
        return [run]
    split = []
    for position, device in enumerate(devices):
        frames: dict[str, Any] = {}
        for name in _PER_DEVICE:
            frame: pd.DataFrame = getattr(run, name)
            ids = frame[c.DEVICE_ID] if c.DEVICE_ID in frame.columns else None
            if ids is None or ids.isna().all():
                frames[name] = frame if position == 0 else frame.iloc[0:0]
            else:
                mine = ids == device if position else (ids == device) | ids.isna()
                frames[name] = frame[mine.fillna(False)].reset_index(drop=True)
        problems = run.problems if position == 0 else []  # said once, by the first
        split.append(replace(run, device_id=device, rank=None, problems=problems, **frames))
    return split


def _load(files: RunFiles, with_trace: bool, counter: _Counter | None) -> ProfileRun:
    problems: list[str] = []
    tables: dict[str, pd.DataFrame] = {}
    for kind, parser in _PARSERS.items():
        paths = files.files.get(kind, ()) if with_trace or kind != kinds.TRACE else ()
        parts = []
        for path in paths:
            data = _read(path, problems, counter)
            if data is None:
                continue
            parsed = parser(data, str(path))
            problems += parsed.problems
            frame = parsed.frame
            hint = device_of_path(path)
            if hint is not None and c.DEVICE_ID in frame.columns:
                frame[c.DEVICE_ID] = frame[c.DEVICE_ID].fillna(hint).astype("Int64")
            parts.append(frame)
        tables[kind] = _concat(parts, kind)
    metadata = parse_run_metadata(
        {str(path): data for path in files.metadata if (data := _read(path, problems, counter))}
    )
    problems += metadata.problems
    problems += [
        f"{path}: summary exported as JSON (--summary-format=json) is not read; export CSV"
        for path in files.unsupported
    ]
    if not files.complete:
        problems.append(_incomplete(files))
    steps = tables[kinds.STEP_TRACE]
    if steps.empty:
        steps = tables[kinds.MSPROF_STEP_TRACE]
    communication = tables[kinds.COMMUNICATION]
    if metadata.rank is not None:
        communication[c.RANK] = communication[c.RANK].fillna(metadata.rank)
    return ProfileRun(
        source=files.root,
        layout=files.layout,
        complete=files.complete,
        device_id=_device(tables, files),
        rank=metadata.rank,
        cann_version=metadata.cann_version,
        torch_npu_version=metadata.torch_npu_version,
        kernels=tables[kinds.KERNELS],
        op_statistic=tables[kinds.OP_STATISTIC],
        api_statistic=tables[kinds.API_STATISTIC],
        step_trace=steps,
        communication=communication,
        communication_statistic=tables[kinds.COMMUNICATION_STATISTIC],
        npu_mem=tables[kinds.NPU_MEM],
        task_time=tables[kinds.TASK_TIME],
        operator_details=tables[kinds.OPERATOR_DETAILS],
        trace=tables[kinds.TRACE],
        problems=problems,
        files={kind: paths for kind, paths in files.files.items() if paths},
    )


def _concat(parts: list[pd.DataFrame], kind: str) -> pd.DataFrame:
    filled = [part for part in parts if not part.empty]
    if not filled:
        # Every parser answers no input with an empty frame of its columns.
        return parts[0] if parts else _PARSERS[kind](b"", "").frame
    if len(filled) == 1:
        return filled[0]
    return pd.concat(filled, ignore_index=True)


def _device(tables: dict[str, pd.DataFrame], files: RunFiles) -> int | None:
    """The device of the run, when the data (or the folders) name exactly one."""
    for kind in (kinds.KERNELS, kinds.STEP_TRACE, kinds.OP_STATISTIC):
        frame = tables[kind]
        if c.DEVICE_ID in frame.columns:
            devices = frame[c.DEVICE_ID].dropna().unique()
            if len(devices) == 1:
                return int(devices[0])
            if len(devices) > 1:
                return None
    if not tables[kinds.TRACE].empty:
        device = device_of_trace(tables[kinds.TRACE])
        if device is not None:
            return device
    return files.devices[0] if len(files.devices) == 1 else None


def _incomplete(files: RunFiles) -> str:
    if files.layout == kinds.TORCH_LAYOUT:
        return (
            f"{files.root}: no {kinds.TORCH_OUTPUT}/{kinds.DONE_MARKER}: torch_npu has not "
            "finished its analysis (or it failed); the data may be partial"
        )
    return f"{files.root}: no op_summary exported (run `msprof --export=on --output={files.root}`)"


def _read(path: Path, problems: list[str], counter: _Counter | None) -> bytes | None:
    try:
        data = read_file(path)
    except OSError as failure:
        problems.append(f"{path}: cannot read ({failure.strerror or failure})")
        data = None
    if counter is not None:
        counter.add(len(data or b""))
    return data


def _file_count(files: RunFiles, with_trace: bool) -> int:
    counted = sum(
        len(paths) for kind, paths in files.files.items() if with_trace or kind != kinds.TRACE
    )
    return counted + len(files.metadata)


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self._total, self._progress = total, progress
        self._done = self._bytes = 0

    def add(self, size: int) -> None:
        self._done += 1
        self._bytes += size
        if self._progress is not None:
            self._progress(self._done, self._total, self._bytes)
