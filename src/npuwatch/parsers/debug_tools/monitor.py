"""msprobe monitor (the training-state monitor) output: statistics CSVs and anomaly alerts.

The layout (../shared/design/formats/msprobe.md §4) under `monitor_output/`, flat or with one
folder per rank (`rank0/`, or msprobe's own `<time>-rank0-<id>/`):

- `<data type>_<first step>-<last step>.csv` for the data types `actv`, `actv_grad`, `exp_avg`,
  `exp_avg_sq`, `grad_unreduced`, `grad_reduced`, `param_origin`, `param_updated`, with the
  header `vpp_stage, name, step, [micro_step,] <ops…>` (any ops: norm, min, max, mean, nans…);
- `anomaly_detected/*.json`: `{tag: {rank, step, micro_step, pp_stage, vpp_stage, call_id,
  tag_name, message, group_mates}}`, the rule (AnomalyTurbulence, AnomalyNan) and the op being
  read out of `message`;
- `anomaly_analyse.json`, the anomaly_processor's top-k. Its layout is not documented, so it is
  read tolerantly: a tag → entry object, a list of entries, or an object holding such a list,
  each entry shaped like an anomaly_detected one (only `step` is required).

The rank of a CSV is its folder's (`rank<N>` in a folder name at or below the root), else the
TensorBoard-style tag in `name` (`0:layer.weight/rank1/post_grad`), else unknown (-1).

A 100,000-step run is millions of rows, so each CSV goes through pandas' C parser in one call;
only a file that shows damage (a skipped line, a short row, a cell that is not a number) is
looked at line by line, to say which lines were dropped.
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.parsers.debug_tools.table_files import decode
from npuwatch.parsers.problem_list import ProblemList

if TYPE_CHECKING:
    import pandas as pd

DATA_TYPES = (
    "actv_grad",
    "actv",
    "exp_avg_sq",
    "exp_avg",
    "grad_unreduced",
    "grad_reduced",
    "param_origin",
    "param_updated",
)
"""Longest first, so that `actv_grad_0-4.csv` is not taken for `actv`."""
KEY_COLUMNS = ("vpp_stage", "name", "step", "micro_step")
UNKNOWN_RANK = -1
_FILE_NAME = re.compile(rf"^({'|'.join(DATA_TYPES)})_(\d+)-(\d+)\.csv$")
_RANK_FOLDER = re.compile(r"(?:^|[^a-z0-9])rank[_-]?(\d+)(?:$|[^0-9])", re.IGNORECASE)
_TAG = re.compile(r"^(?:(\d+):)?(.*?)/rank(\d+)/(.+)$")
_RULE = re.compile(r"Rule\s+(\w+)")
_METRIC = re.compile(r",\s*'([^']+)'\s*\)")
_SKIPPED = re.compile(r"Skipping line (\d+): expected (\d+) fields, saw (\d+)")
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


def load_monitor(root: Path) -> MonitorRun:
    """Everything under `root`; problems instead of errors for what is damaged."""
    problems: list[str] = []
    pieces: dict[tuple[str, int], list[pd.DataFrame]] = {}
    csvs = sorted(
        (path for path in root.rglob("*.csv") if _FILE_NAME.match(path.name)), key=_csv_order
    )
    for path in csvs:
        data_type = _data_type(path)
        folder_rank = _folder_rank(path, root)
        file_problems = ProblemList(str(path))
        frame = read_statistics(path, file_problems)
        problems.extend(file_problems.finish())
        if frame is None:
            continue
        for rank, part in _by_rank(frame, folder_rank):
            pieces.setdefault((data_type, rank), []).append(part)
    tables = [_table(key, parts, problems) for key, parts in sorted(pieces.items())]
    detected = sorted(path for folder in _anomaly_folders(root) for path in folder.glob("*.json"))
    anomalies = [anomaly for path in detected for anomaly in _read_anomalies(path, problems)]
    analyses = sorted(root.rglob("anomaly_analyse*.json"))
    analysed = [anomaly for path in analyses for anomaly in _read_anomalies(path, problems)]
    return MonitorRun(
        root=str(root),
        tables=[table for table in tables if table is not None],
        anomalies=anomalies,
        analysed=analysed,
        files=len(csvs) + len(detected) + len(analyses),
        problems=problems,
    )


def read_statistics(path: Path, problems: ProblemList) -> pd.DataFrame | None:
    """The good rows of one statistics CSV (step as int64, ops as float64), or None."""
    import pandas as pd  # noqa: PLC0415 - the agent never reads monitor CSVs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frame = pd.read_csv(
                path,
                index_col=False,
                skipinitialspace=True,
                on_bad_lines="warn",
                dtype={"name": "category"},
                encoding="utf-8-sig",
            )
        except pd.errors.EmptyDataError:
            problems.add(1, "empty file")
            return None
        except (OSError, UnicodeDecodeError, ValueError) as failure:
            problems.add(0, f"cannot read: {failure}")
            return None
    frame.columns = [str(column).strip() for column in frame.columns]
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed:")])
    if "step" not in frame.columns or "name" not in frame.columns:
        problems.add(1, f"header {list(frame.columns)} has no `name` and `step`; file skipped")
        return None
    skipped = [_SKIPPED.search(str(warning.message)) for warning in caught]
    skipped_lines = {int(match.group(1)) for match in skipped if match}
    for match in (match for match in skipped if match):
        problems.add(
            int(match.group(1)),
            f"{match.group(3)} fields where the header has {match.group(2)}; row skipped",
        )
    numeric = [column for column in frame.columns if column != "name"]
    bad = pd.Series(False, index=frame.index)
    for column in numeric:
        if frame[column].dtype.kind not in "fiu":
            raw = frame[column]
            frame[column] = pd.to_numeric(raw, errors="coerce")
            bad |= frame[column].isna() & raw.notna()
    keys = [column for column in KEY_COLUMNS if column in frame.columns and column != "name"]
    bad |= frame[[*keys, "name"]].isna().any(axis=1)
    ops = [column for column in numeric if column not in KEY_COLUMNS]
    # A short row is read with NaN in its missing cells, like a real NaN statistic: only the
    # rows with a NaN are checked against their line (there are none in a healthy run).
    maybe_short = frame[ops].isna().any(axis=1) & ~bad
    if bad.any() or maybe_short.any():
        bad |= _damaged_rows(path, frame, bad, maybe_short, skipped_lines, problems)
        frame = frame[~bad]
    integers = [column for column in keys if column in frame.columns]
    frame = frame.astype({**dict.fromkeys(integers, "int64"), **dict.fromkeys(ops, "float64")})
    cleaned: pd.DataFrame = frame.reset_index(drop=True)
    return cleaned


def _damaged_rows(
    path: Path,
    frame: pd.DataFrame,
    bad: pd.Series,
    maybe_short: pd.Series,
    skipped_lines: set[int],
    problems: ProblemList,
) -> pd.Series:
    """`bad` with the short rows added; a problem for each, naming its line."""
    lines = decode(path.read_bytes()).splitlines()
    numbered = [number for number, line in enumerate(lines, 1) if line.strip()]
    data_lines = [number for number in numbered[1:] if number not in skipped_lines]
    width = len(next(csv.reader([lines[numbered[0] - 1]])))
    result: pd.Series = bad.copy()
    for row in frame.index[bad | maybe_short]:
        line = data_lines[row] if row < len(data_lines) else 0
        fields = next(csv.reader([lines[line - 1]])) if line else []
        if len(fields) < width:
            problems.add(line, f"{len(fields)} fields where the header has {width}; row skipped")
            result[row] = True
        elif bad[row]:
            problems.add(line, "a step, stage or statistic that is not a number; row skipped")
    return result


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
    names = union_categoricals([part["name"] for part in parts], ignore_order=True)
    frame = pd.concat([part[shared] for part in parts], ignore_index=True)
    frame["name"] = names
    ops = tuple(column for column in shared if column not in KEY_COLUMNS)
    if frame.empty:
        return None
    return StatisticsTable(data_type=data_type, rank=rank, ops=ops, frame=frame)


def _by_rank(frame: pd.DataFrame, folder_rank: int) -> Iterable[tuple[int, pd.DataFrame]]:
    """The frame as one piece per rank: its folder's, else the ranks in the tags of `name`
    (each piece named by the module or parameter of the tag alone)."""
    import numpy as np  # noqa: PLC0415 - with pandas
    import pandas as pd  # noqa: PLC0415 - idem

    if folder_rank != UNKNOWN_RANK or frame.empty:
        return [(folder_rank, frame)]
    categories = [str(name) for name in frame["name"].cat.categories]
    tags = [_TAG.match(name) for name in categories]
    if not any(tags):
        return [(UNKNOWN_RANK, frame)]
    ranks = np.asarray([int(tag.group(3)) if tag else UNKNOWN_RANK for tag in tags])
    plain = [
        name.rsplit("/rank", 1)[0] if tag else name
        for tag, name in zip(tags, categories, strict=True)
    ]
    codes = frame["name"].cat.codes.to_numpy()
    row_ranks = ranks[codes]
    pieces = []
    for rank in sorted({int(rank) for rank in ranks}):
        names = sorted({plain[code] for code in np.flatnonzero(ranks == rank)})
        position = {name: index for index, name in enumerate(names)}
        recode = np.asarray([position.get(name, -1) for name in plain])
        rows = row_ranks == rank
        piece = frame[rows].copy()
        piece["name"] = pd.Categorical.from_codes(recode[codes[rows]], categories=pd.Index(names))
        pieces.append((rank, piece))
    return pieces


def _read_anomalies(path: Path, problems: list[str]) -> list[Anomaly]:
    source = str(path)
    try:
        document = json.loads(decode(path.read_bytes()))
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
    tag = _TAG.match(tag_name)
    rule, metric = _RULE.search(message), _METRIC.search(message)
    task = tag.group(4) if tag else ""
    rank = _integer(entry.get("rank"))
    if rank is None:
        rank = int(tag.group(3)) if tag else UNKNOWN_RANK
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
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _anomaly_folders(root: Path) -> list[Path]:
    if root.name == "anomaly_detected":
        return [root]
    return sorted(path for path in root.rglob("anomaly_detected") if path.is_dir())


def _data_type(path: Path) -> str:
    match = _FILE_NAME.match(path.name)
    return match.group(1) if match else ""


def _csv_order(path: Path) -> tuple[str, str, int]:
    match = _FILE_NAME.match(path.name)
    return (str(path.parent), match.group(1) if match else "", int(match.group(2)) if match else 0)


def _folder_rank(path: Path, root: Path) -> int:
    """The rank in the nearest folder name between the file and `root` (included)."""
    for folder in path.parents:
        match = _RANK_FOLDER.search(folder.name)
        if match:
            return int(match.group(1))
        if folder == root:
            break
    return UNKNOWN_RANK
