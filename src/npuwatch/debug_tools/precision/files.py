"""The precision files under a path, found by their names and read with the right parser.

| file name | kind |
|---|---|
| `compare_result_*.xlsx/csv`, `debug_compare_result_*.xlsx/csv` | msprobe/ptdbg compare |
| `compare_result_*.json`, `diff_analyze_*.json` | first-mismatch compare |
| `multi_ranks_compare_merge_*.xlsx` | multi-rank merge |
| `result_*.csv` | msit offline compare |
| `accuracy_checking_result_*.csv`, `accuracy_checking_details_*.csv` | acc_check |
| `anomaly_analyze_*.json` | overflow check |

Sources and problems name files relative to the path given, so that a report reads the same
wherever the folder is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from npuwatch.debug_tools.precision.read.acc_check import AccCheckFile, read_acc_check
from npuwatch.debug_tools.precision.read.compare_json import read_compare_json
from npuwatch.debug_tools.precision.read.compare_merge import read_merge_workbook
from npuwatch.debug_tools.precision.read.compare_rows import CompareTable
from npuwatch.debug_tools.precision.read.compare_table import read_compare_table
from npuwatch.debug_tools.precision.read.msit_result import read_msit_result
from npuwatch.debug_tools.precision.read.overflow import OverflowFile, read_anomaly_analyze

KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("compare", re.compile(r"^(debug_)?compare_result_.*\.(xlsx|csv)$", re.IGNORECASE)),
    ("compare_json", re.compile(r"^(compare_result_|diff_analyze_).*\.json$", re.IGNORECASE)),
    ("merge", re.compile(r"^multi_ranks_compare_merge_.*\.xlsx$", re.IGNORECASE)),
    ("msit", re.compile(r"^result_.*\.csv$", re.IGNORECASE)),
    ("acc_check", re.compile(r"^accuracy_checking_(result|details)_.*\.csv$", re.IGNORECASE)),
    ("overflow", re.compile(r"^anomaly_analyze_.*\.json$", re.IGNORECASE)),
)
FILE_NAMES = (
    "compare_result_*.xlsx|csv|json, debug_compare_result_*.xlsx, diff_analyze_*.json, "
    "multi_ranks_compare_merge_*.xlsx, result_*.csv (msit), accuracy_checking_*.csv, "
    "anomaly_analyze_*.json"
)


@dataclass
class PrecisionInputs:
    """Everything read under one path."""

    root: str
    compares: list[CompareTable] = field(default_factory=list)
    acc_checks: list[AccCheckFile] = field(default_factory=list)
    overflows: list[OverflowFile] = field(default_factory=list)
    files: int = 0

    @property
    def problems(self) -> list[str]:
        found = [problem for table in self.compares for problem in table.problems]
        found += [problem for checked in self.acc_checks for problem in checked.problems]
        return found + [problem for overflow in self.overflows for problem in overflow.problems]

    @property
    def has_data(self) -> bool:
        return (
            any(table.rows for table in self.compares)
            or any(f.results or f.details for f in self.acc_checks)
            or any(f.nodes for f in self.overflows)
        )


def kind_of(path: Path) -> str | None:
    """The kind of precision file `path` is by its name, None when it is none of them."""
    return next((kind for kind, pattern in KINDS if pattern.match(path.name)), None)


def is_precision_file(path: Path) -> bool:
    """Whether `path` is a precision file by its name."""
    return kind_of(path) is not None


def find_precision_files(root: Path) -> list[tuple[str, Path]]:
    """(kind, path) of every precision file at or under `root`, in path order."""
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [(kind, path) for path in paths if (kind := kind_of(path)) is not None]


def read_precision_inputs(root: Path) -> PrecisionInputs:
    """Read every precision file at or under `root` (damaged ones become problems)."""
    inputs = PrecisionInputs(str(root))
    base = root.parent if root.is_file() else root
    for kind, path in find_precision_files(root):
        label = path.relative_to(base).as_posix()
        inputs.files += 1
        if kind == "compare":
            inputs.compares.append(_relabel_table(read_compare_table(path), path, label))
        elif kind == "compare_json":
            tables = read_compare_json(path)
            inputs.compares.extend(_relabel_table(t, path, label) for t in tables)
        elif kind == "merge":
            tables = read_merge_workbook(path)
            inputs.compares.extend(_relabel_table(t, path, label) for t in tables)
        elif kind == "msit":
            inputs.compares.append(_relabel_table(read_msit_result(path), path, label))
        elif kind == "acc_check":
            found = read_acc_check(path)
            inputs.acc_checks.append(
                replace(found, source=label, problems=_relabel(found.problems, path, label))
            )
        else:
            overflow = read_anomaly_analyze(path)
            inputs.overflows.append(
                replace(overflow, source=label, problems=_relabel(overflow.problems, path, label))
            )
    return inputs


def _relabel_table(table: CompareTable, path: Path, label: str) -> CompareTable:
    return replace(table, source=label, problems=_relabel(table.problems, path, label))


def _relabel(problems: list[str], path: Path, label: str) -> list[str]:
    prefix = str(path)
    return [label + p[len(prefix) :] if p.startswith(prefix) else p for p in problems]
