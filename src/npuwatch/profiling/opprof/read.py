"""msOpProf (`msprof op`) result folders, OPPROF_<ts>_<16 letters>, read into launches.

An OPPROF folder holds one operator launch flattened at its root (`<Metric>.csv`), several
launches of one device (`<OpName>/<n>/<Metric>_<ts17>.csv`), or several devices
(`device<id>/<OpName>/<n>/…`); a parent folder may hold several OPPROF folders. Every launch
folder is read the same way, and its device, operator and launch number come from its path.

The CSVs end every line with a comma, write empty cells as `NA` (older builds `N/A`) and change
their columns with the chip and the CANN version, so columns are looked up by name and a cell is
kept only when it holds a number. `dump/op_basic_info.txt` (Key=Value) fills what
OpBasicInfo.csv lacks. Simulator runs add per-core `<core>_code_exe.csv` (source lines) and
`<core>_instr_exe.csv` (instructions, with a quoted `detail`) under `simulator/`. A launch's
trace.json (MC2/LCCL blocks and HCCL tasks on board; every instruction in a simulator run, all
cores in `simulator/trace.json`, one in `simulator/<core>/trace.json`) is summed by
`read_trace`, and its visualize_data.bin (OpBasicInfo with msOpProf's advice, the same trace)
read by `read_visualize`.

Nothing here raises on a damaged file: what could not be read is a problem `file:line: what`.

The on-board metric CSVs and OpBasicInfo are read in `read_metrics`, the simulator's hotspots
in `read_simulator`, the CSV reading both share in `read_files`; this module finds the
launches of a folder and its layout.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.bounded_numbers import fitting_int
from npuwatch.profiling.opprof.read_files import listing, read_opprof_csv
from npuwatch.profiling.opprof.read_metrics import (
    BASIC_INFO,
    METRICS,
    MetricTable,
    OpBasicInfo,
    basic_info,
    metric_table,
    with_dump,
)
from npuwatch.profiling.opprof.read_simulator import (
    SimulatedCore,
    simulated_cores,
)
from npuwatch.profiling.opprof.read_trace import OpTrace, read_trace
from npuwatch.profiling.opprof.read_visualize import VisualizeData, read_visualize

RESULT_FOLDER = re.compile(r"^OPPROF_\d{14}_[A-Z]{16}$")
_CSV_NAME = re.compile(r"^(?P<metric>[A-Za-z0-9]+?)(?:_\d{17})?\.csv$")
_DEVICE_FOLDER = re.compile(r"^device(\d+)$")
TRACE_FILE, VISUALIZE_FILE = "trace.json", "visualize_data.bin"
SINGLE, LAUNCHES, DEVICES = "single launch", "several launches", "several devices"


@dataclass(frozen=True)
class OpLaunch:
    """One launch of one operator: its basic info, metric tables and simulator hotspots."""

    folder: str
    """Relative to the OPPROF folder; `.` for a flattened single launch."""
    op_name: str
    """From OpBasicInfo, else the `<OpName>` folder; empty when neither names it."""
    device_id: int | None
    launch: int | None
    basic: OpBasicInfo
    metrics: dict[str, MetricTable]
    cores: tuple[SimulatedCore, ...] = ()
    trace: OpTrace | None = None
    """trace.json of all cores: the launch's own, else `simulator/trace.json`."""
    core_traces: tuple[OpTrace, ...] = ()
    """A simulator run's `simulator/<core>/trace.json`, in core order."""
    visualize: VisualizeData | None = None
    """visualize_data.bin: the launch's own, else `simulator/visualize_data.bin`."""


@dataclass(frozen=True)
class OpProfRun:
    """One OPPROF_* folder."""

    source: Path
    layout: str
    """SINGLE, LAUNCHES or DEVICES."""
    launches: tuple[OpLaunch, ...]
    problems: tuple[str, ...] = field(default=())


def is_opprof_folder(path: Path) -> bool:
    """Whether `path` is an OPPROF_* folder or directly holds one."""
    if not path.is_dir():
        return False
    if path.name.startswith("OPPROF_"):
        return True
    return any(child.is_dir() and child.name.startswith("OPPROF_") for child in listing(path))


def load_opprof(root: Path) -> list[OpProfRun]:
    """The OPPROF runs at `root`: itself, or the OPPROF_* folders it holds (sorted by name)."""
    if root.name.startswith("OPPROF_"):
        return [read_opprof_run(root)]
    folders = [p for p in listing(root) if p.is_dir() and p.name.startswith("OPPROF_")]
    return [read_opprof_run(folder) for folder in folders]


def read_opprof_run(root: Path) -> OpProfRun:
    """Every launch of one OPPROF folder, in path order (op name, launch number)."""
    problems: list[str] = []
    if not RESULT_FOLDER.match(root.name):
        problems.append(f"{root}: not named OPPROF_<YYYYmmddHHMMSS>_<16 letters>; read anyway")
    launches = [
        _read_launch(root, folder, problems) for folder in sorted(_launch_folders(root), key=_order)
    ]
    if not launches:
        problems.append(f"{root}: no OpBasicInfo, metric CSV or simulator/ folder in it")
    parts = [launch.folder.split("/") for launch in launches]
    if any(_DEVICE_FOLDER.match(part[0]) for part in parts if len(part) > 2):
        layout = DEVICES
    elif launches and all(launch.folder == "." for launch in launches):
        layout = SINGLE
    else:
        layout = LAUNCHES
    return OpProfRun(root, layout, tuple(launches), tuple(problems))


def _launch_folders(root: Path) -> Iterator[Path]:
    """Folders that hold a launch's results; `dump/` and `simulator/` belong to their parent."""
    entries = listing(root)
    names = {entry.name for entry in entries}
    if "simulator" in names or any(
        entry.is_file() and _CSV_NAME.match(entry.name) and _metric(entry.name) for entry in entries
    ):
        yield root
        return
    for entry in entries:
        if entry.is_dir() and entry.name not in ("dump", "simulator"):
            yield from _launch_folders(entry)


def _order(folder: Path) -> list[tuple[int, int | str]]:
    """Launch 10 after launch 9: numbers compare as numbers."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in folder.parts]


def _metric(name: str) -> str | None:
    match = _CSV_NAME.match(name)
    metric = match.group("metric") if match else None
    return metric if metric in (*METRICS, BASIC_INFO) else None


def _read_launch(root: Path, folder: Path, problems: list[str]) -> OpLaunch:
    relative = folder.relative_to(root).as_posix()
    parts = [] if relative == "." else relative.split("/")
    # A number past 64 bits in a folder name is no device or launch (the path still says it).
    device = next((fitting_int(m.group(1)) for p in parts if (m := _DEVICE_FOLDER.match(p))), None)
    launch = next((fitting_int(part) for part in reversed(parts) if part.isdigit()), None)
    named = [p for p in parts if not p.isdigit() and not _DEVICE_FOLDER.match(p)]
    metrics: dict[str, MetricTable] = {}
    basic = OpBasicInfo()
    for path in listing(folder):
        metric = _metric(path.name) if path.is_file() else None
        if metric is None:
            continue
        rows = read_opprof_csv(path, problems)
        if metric == BASIC_INFO:
            basic = basic_info(path, rows, problems)
        else:
            metrics[metric] = metric_table(metric, path, rows, problems)
    basic = with_dump(basic, folder / "dump" / "op_basic_info.txt", problems)
    # A flattened launch without OpBasicInfo (a simulator run) has no name anywhere.
    op_name = basic.op_name or (named[-1] if named else "")
    if basic.device_id is not None and device is None:
        device = basic.device_id
    simulator = folder / "simulator"
    cores = tuple(simulated_cores(simulator, problems))
    trace_path = _first_file(folder / TRACE_FILE, simulator / TRACE_FILE)
    trace = read_trace(trace_path, problems) if trace_path else None
    core_traces = [
        read_trace(core / TRACE_FILE, problems)
        for core in listing(simulator)
        if (core / TRACE_FILE).is_file()
    ]
    visualize_path = _first_file(folder / VISUALIZE_FILE, simulator / VISUALIZE_FILE)
    visualize = read_visualize(visualize_path, problems) if visualize_path else None
    return OpLaunch(
        relative, op_name, device, launch, basic, metrics, cores,
        trace, tuple(read for read in core_traces if read is not None), visualize,
    )  # fmt: skip


def _first_file(*paths: Path) -> Path | None:
    return next((path for path in paths if path.is_file()), None)
