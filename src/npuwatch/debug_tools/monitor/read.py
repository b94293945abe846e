"""msprobe monitor (the training-state monitor) output: statistics CSVs and anomaly alerts.

The layout (../shared/design/formats/msprobe.md §4) under `monitor_output/`, flat or with one
folder per rank (`rank0/`, or msprobe's own `<time>-rank0-<id>/`):

- `<data type>_<first step>-<last step>.csv` for the data types `actv`, `actv_grad`, `exp_avg`,
  `exp_avg_sq`, `grad_unreduced`, `grad_reduced`, `param_origin`, `param_updated`, with the
  header `vpp_stage, name, step, [micro_step,] <ops…>` (any ops: norm, min, max, mean, nans…),
  read by `read_files`;
- `anomaly_detected/*.json`: `{tag: {rank, step, micro_step, pp_stage, vpp_stage, call_id,
  tag_name, message, group_mates}}`, the rule (AnomalyTurbulence, AnomalyNan) and the op being
  read out of `message`;
- `anomaly_analyse.json`, the anomaly_processor's top-k. Its layout is not documented, so it is
  read tolerantly: a tag → entry object, a list of entries, or an object holding such a list,
  each entry shaped like an anomaly_detected one (only `step` is required).

`load_monitor` holds every statistics row of the run in memory (for the chart, and for callers
that want the tables); a summary of a long run reads the files one at a time instead
(`read_files.read_pieces`) and the alerts alone with `read_alerts`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.bounded_numbers import fits, fitting_int
from npuwatch.debug_tools.monitor.read_files import (
    DATA_TYPES,
    KEY_COLUMNS,
    TAG,
    read_pieces,
    statistics_files,
    tag_rank,
)
from npuwatch.debug_tools.table_files import decode
from npuwatch.json_input import load_json
from npuwatch.untrusted_files import read_file

if TYPE_CHECKING:
    import pandas as pd

_RULE = re.compile(r"Rule\s+(\w+)")
_METRIC = re.compile(r",\s*'([^']+)'\s*\)")
_TASK_DATA_TYPES = {
    "input": "actv",
    "output": "actv",
    "input_grad": "actv_grad",
    "output_grad": "actv_grad",
    "pre_grad": "grad_unreduced",
    "post_grad": "grad_reduced",
}
"""The task of a TensorBoard tag → the data type of its CSV (the others are named alike)."""


@dataclass(frozen=True)
class Anomaly:
    """One alert of msprobe's anomaly detection."""

    rank: int
    step: int
    micro_step: int | None
    rule: str
    """`AnomalyTurbulence`, `AnomalyNan`, or `unknown` when the message names none."""
    metric: str
    """The op whose value fired (`norm`, `min` …), `unknown` when the message names none."""
    data_type: str
    module: str
    tag_name: str
    call_id: int | None
    vpp_stage: int | None
    pp_stage: int | None
    group_mates: list[int]
    message: str
    source: str


@dataclass(frozen=True)
class StatisticsTable:
    """Every row of one data type on one rank, its files concatenated in step order."""

    data_type: str
    rank: int
    ops: tuple[str, ...]
    frame: pd.DataFrame
    """Columns vpp_stage, name (categorical), step (int64), micro_step when the files have
    it, and one float64 column per op."""


@dataclass(frozen=True)
class MonitorRun:
    """What a monitor output folder holds, and what could not be read in it."""

    root: str
    tables: list[StatisticsTable] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    analysed: list[Anomaly] = field(default_factory=list)
    """The entries of anomaly_analyse.json (the processor's top-k), in its order."""
    files: int = 0
    """Statistics CSVs and anomaly JSONs found (read or not)."""
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Alerts:
    """The alerts of a monitor output folder."""

    anomalies: list[Anomaly]
    analysed: list[Anomaly]
    files: int
    """anomaly_detected/*.json and anomaly_analyse*.json files found (read or not)."""


def load_monitor(root: Path) -> MonitorRun:
    """Everything under `root`; problems instead of errors for what is damaged."""
    problems: list[str] = []
    pieces: dict[tuple[str, int], list[pd.DataFrame]] = {}
    csvs = statistics_files(root)
    for piece in read_pieces(csvs, root, problems):
        pieces.setdefault((piece.data_type, piece.rank), []).append(piece.frame)
    tables = [_table(key, parts, problems) for key, parts in sorted(pieces.items())]
    alerts = read_alerts(root, problems)
    return MonitorRun(
        root=str(root),
        tables=[table for table in tables if table is not None],
        anomalies=alerts.anomalies,
        analysed=alerts.analysed,
        files=len(csvs) + alerts.files,
        problems=problems,
    )


def read_alerts(root: Path, problems: list[str]) -> Alerts:
    """anomaly_detected/*.json and anomaly_analyse.json under `root`."""
    detected = sorted(path for folder in _anomaly_folders(root) for path in folder.glob("*.json"))
    anomalies = [anomaly for path in detected for anomaly in _read_anomalies(path, problems)]
    analyses = sorted(root.rglob("anomaly_analyse*.json"))
    analysed = [anomaly for path in analyses for anomaly in _read_anomalies(path, problems)]
    return Alerts(anomalies=anomalies, analysed=analysed, files=len(detected) + len(analyses))


def _table(
    key: tuple[str, int], parts: list[pd.DataFrame], problems: list[str]
) -> StatisticsTable | None:
    import pandas as pd  # noqa: PLC0415 - the agent never reads monitor CSVs
    from pandas.api.types import union_categoricals  # noqa: PLC0415 - idem

    data_type, rank = key
    columns = [list(part.columns) for part in parts]
    shared = [column for column in columns[0] if all(column in other for other in columns)]
    if any(other != columns[0] for other in columns):
        problems.append(
            f"{data_type} rank {rank}: the files have different columns; only {shared} are kept"
        )
    if len(parts) == 1:
        frame = parts[0][shared]
    else:
        names = union_categoricals([part["name"] for part in parts], ignore_order=True)
        frame = pd.concat([part[shared] for part in parts], ignore_index=True)
        frame["name"] = names
    ops = tuple(column for column in shared if column not in KEY_COLUMNS)
    if frame.empty:
        return None
    return StatisticsTable(data_type=data_type, rank=rank, ops=ops, frame=frame)


def _read_anomalies(path: Path, problems: list[str]) -> list[Anomaly]:
    source = str(path)
    try:
        document = load_json(decode(read_file(path)))
    except OSError as failure:
        problems.append(f"{source}:0: cannot read: {failure.strerror}")
        return []
    except json.JSONDecodeError as failure:
        problems.append(f"{source}:{failure.lineno}: not JSON ({failure.msg}); file skipped")
        return []
    entries = _entries(document)
    if entries is None:
        problems.append(f"{source}:1: neither tag → anomaly entries nor a list of them")
        return []
    found = []
    for key, entry in entries:
        anomaly = _anomaly(key, entry, source)
        if anomaly is None:
            problems.append(f"{source}:1: entry {key!r} has no step; skipped")
        else:
            found.append(anomaly)
    return found


def _entries(document: Any) -> list[tuple[str, Any]] | None:
    if isinstance(document, list):
        return [(str(position), entry) for position, entry in enumerate(document)]
    if not isinstance(document, dict):
        return None
    lists = [value for value in document.values() if isinstance(value, list)]
    if lists and all(isinstance(value, list) for value in document.values()):
        return [(str(position), entry) for value in lists for position, entry in enumerate(value)]
    return [(str(key), entry) for key, entry in document.items()]


def _anomaly(key: str, entry: Any, source: str) -> Anomaly | None:
    if not isinstance(entry, dict) or _integer(entry.get("step")) is None:
        return None
    message = str(entry.get("message", ""))
    tag_name = str(entry.get("tag_name") or key.split("_step_", maxsplit=1)[0])
    tag = TAG.match(tag_name)
    rule, metric = _RULE.search(message), _METRIC.search(message)
    task = tag.group(4) if tag else ""
    rank = _integer(entry.get("rank"))
    if rank is None:
        rank = tag_rank(tag)
    mates = entry.get("group_mates")
    return Anomaly(
        rank=rank,
        step=_integer(entry.get("step")) or 0,
        micro_step=_integer(entry.get("micro_step")),
        rule=rule.group(1) if rule else "unknown",
        metric=metric.group(1) if metric else "unknown",
        data_type=_TASK_DATA_TYPES.get(task, task or "unknown"),
        module=tag_name.rsplit("/rank", 1)[0] if tag else tag_name,
        tag_name=tag_name,
        call_id=_integer(entry.get("call_id")),
        vpp_stage=_integer(entry.get("vpp_stage")),
        pp_stage=_integer(entry.get("pp_stage")),
        group_mates=[m for m in map(_integer, mates) if m is not None]
        if isinstance(mates, list)
        else [],
        message=message,
        source=source,
    )


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    # A number past 64 bits (an int, a string of digits, 1e300) is no step, rank or stage.
    if isinstance(value, int):
        return value if fits(value) else None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return fitting_int(value.strip())
    if isinstance(value, float) and value.is_integer() and abs(value) < 2.0**63:
        return int(value)
    return None


def _anomaly_folders(root: Path) -> list[Path]:
    if root.name == "anomaly_detected":
        return [root]
    return sorted(path for path in root.rglob("anomaly_detected") if path.is_dir())


_STATISTICS_CSV = re.compile(rf"^({'|'.join(DATA_TYPES)})_\d+-\d+\.csv$")
_ANOMALY_FOLDER = "anomaly_detected"


def is_monitor_output(folder: Path) -> bool:
    """Whether `folder` is a training monitor's output: it holds statistics CSVs
    (`grad_reduced_0-19.csv` …) or an `anomaly_detected/` folder, or rank folders that hold
    statistics CSVs (msprobe's own layout: monitor_output/<time>-rank<N>-<id>/*.csv). Links are
    not followed."""
    subfolders = []
    for entry in _folder_entries(folder):
        if entry.is_dir(follow_symlinks=False):
            if entry.name == _ANOMALY_FOLDER:
                return True
            subfolders.append(entry.path)
        elif _STATISTICS_CSV.match(entry.name) and entry.is_file(follow_symlinks=False):
            return True
    return any(
        _STATISTICS_CSV.match(entry.name) and entry.is_file(follow_symlinks=False)
        for subfolder in subfolders
        for entry in _folder_entries(Path(subfolder))
    )


def _folder_entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:  # gone, or not a folder
        return []
