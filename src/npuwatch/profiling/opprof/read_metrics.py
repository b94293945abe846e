"""msOpProf's on-board CSVs of one launch: the per-block metric tables and OpBasicInfo.

`<Metric>.csv` (PipeUtilization, Memory … of the default `--aic-metrics`) hold a row per
(block_id, sub_block_id) on A2/A3 and A5, one row for the whole AI Core on 310P; their columns
change with the chip and the CANN version, so columns are kept by name and a cell only when it
holds a number. `OpBasicInfo.csv` is completed by `dump/op_basic_info.txt` (Key=Value). The
simulator's outputs are `read_simulator`; finding the launches of a folder is `read`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from npuwatch.parsers.problem_list import ProblemList
from npuwatch.profiling.opprof.read_files import EMPTY_CELLS, OpProfCsv, cell_number
from npuwatch.untrusted_files import read_file

METRICS = (
    "ArithmeticUtilization",
    "L2Cache",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "PipeUtilization",
    "ResourceConflictRatio",
)
"""The per-block metric CSVs of the default `--aic-metrics`."""
BASIC_INFO = "OpBasicInfo"


@dataclass(frozen=True)
class BlockRow:
    """One row of a metric CSV: a (block_id, sub_block_id) on A2/A3 and A5, the whole AI Core on
    310P (no block columns). `values` holds the cells that are numbers; NA cells are absent."""

    line: int
    block_id: int | None
    sub_block: str | None
    values: dict[str, float]


@dataclass(frozen=True)
class MetricTable:
    """One metric CSV (PipeUtilization, Memory …) of a launch, its header as written."""

    metric: str
    file: str
    columns: tuple[str, ...]
    rows: tuple[BlockRow, ...]


@dataclass(frozen=True)
class OpBasicInfo:
    """OpBasicInfo.csv, completed by dump/op_basic_info.txt; None where neither says."""

    op_name: str | None = None
    op_type: str | None = None
    """`vector`, `cube`, `mix`; `AiCore` on 310P."""
    duration_us: float | None = None
    block_dim: int | None = None
    mix_block_dim: int | None = None
    device_id: int | None = None
    pid: int | None = None
    current_freq_mhz: float | None = None
    rated_freq_mhz: float | None = None
    soc_version: str | None = None


def metric_table(metric: str, path: Path, read: OpProfCsv, problems: list[str]) -> MetricTable:
    """One metric CSV as block rows; a row whose block_id is not a whole number is skipped."""
    listed = ProblemList(str(path))
    rows: list[BlockRow] = []
    for line, cells in read.rows:
        record = dict(zip(read.header, cells, strict=True))
        block_text = record.pop("block_id", None)
        sub_block = record.pop("sub_block_id", None) or None
        block = cell_number(block_text) if block_text is not None else None
        if block_text is not None and (block is None or not block.is_integer()):
            listed.add(line, f"block_id {block_text!r} is not a whole number; row skipped")
            continue
        values: dict[str, float] = {}
        for column, cell in record.items():
            value = cell_number(cell)
            if value is not None:
                values[column] = value
            elif cell not in EMPTY_CELLS:
                listed.add(line, f"{column} {cell!r} is not a number; left empty")
        rows.append(BlockRow(line, None if block is None else int(block), sub_block, values))
    problems.extend(listed.finish())
    return MetricTable(metric, str(path), tuple(read.header), tuple(rows))


_BASIC_COLUMNS = {
    "Op Name": "op_name",
    "Op Type": "op_type",
    "Task Duration(us)": "duration_us",
    "Block Dim": "block_dim",
    "Mix Block Dim": "mix_block_dim",
    "Device Id": "device_id",
    "Pid": "pid",
    "Current Freq": "current_freq_mhz",
    "Rated Freq": "rated_freq_mhz",
    "Run Soc Version": "soc_version",
}
_TEXT_FIELDS = ("op_name", "op_type", "soc_version")
_WHOLE_FIELDS = ("block_dim", "mix_block_dim", "device_id", "pid")


def _basic_values(pairs: dict[str, str], where: str, problems: list[str]) -> dict[str, Any]:
    """OpBasicInfo fields of `pairs` (column or key → text) as str, int or float, the types of
    the fields they go to; NA and N/A left out."""
    values: dict[str, Any] = {}
    for key, text in pairs.items():
        name = _BASIC_COLUMNS.get(key.strip())
        text = text.strip()
        if name is None or text in EMPTY_CELLS:
            continue
        if name in _TEXT_FIELDS:
            values[name] = text
            continue
        number = cell_number(text)
        whole = name in _WHOLE_FIELDS
        if number is None or (whole and not (number.is_integer() and abs(number) < 2.0**63)):
            problems.append(f"{where}: {key.strip()} {text!r} is not a number; left empty")
        else:
            values[name] = int(number) if name in _WHOLE_FIELDS else number
    return values


def basic_info(path: Path, read: OpProfCsv, problems: list[str]) -> OpBasicInfo:
    """OpBasicInfo.csv's first data row (it has one)."""
    if not read.rows:
        if read.header:
            problems.append(f"{path}:2: no data row")
        return OpBasicInfo()
    line, cells = read.rows[0]
    if len(read.rows) > 1:
        problems.append(f"{path}:{read.rows[1][0]}: more than one data row; the first is used")
    pairs = dict(zip(read.header, cells, strict=True))
    return OpBasicInfo(**_basic_values(pairs, f"{path}:{line}", problems))


def with_dump(basic: OpBasicInfo, path: Path, problems: list[str]) -> OpBasicInfo:
    """`basic` with the gaps filled from dump/op_basic_info.txt, when there is one."""
    if not path.is_file():
        return basic
    try:
        text = read_file(path).decode("utf-8", errors="replace")
    except OSError as failure:
        problems.append(f"{path}: cannot read ({failure.strerror or failure})")
        return basic
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals:
            problems.append(f"{path}:{number}: no Key=Value; line skipped")
            continue
        pairs[key.strip()] = value
    found = _basic_values(pairs, str(path), problems)
    gaps = {name: value for name, value in found.items() if getattr(basic, name) is None}
    return replace(basic, **gaps)
