"""`npuwatch grep --baseline`: the operators of the archive whose name or type matches a pattern.

Each baseline's op_summary.csv is read with the csv module, row by row: `grep` must start fast
(docs/adr/0002-grep-start-up.md), and pandas alone would cost more than the whole search of a
few hundred baselines. Columns are found by their header, so a column added to the archive
later does not shift the others.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from npuwatch.parsers.table_numbers import usable_cell
from npuwatch.profiling.baseline.archive import Archive, BaselineInfo

_FIELDS = ("op_name", "op_type", "task_type", "count", "total_us", "avg_us", "min_us", "max_us")
_SEARCHED = ("op_name", "op_type")


@dataclass(frozen=True)
class OperatorMatch:
    """One row of a baseline's operator table, and the baseline it belongs to."""

    baseline: str
    date: str
    model: str
    scenario: str
    op_name: str
    op_type: str
    task_type: str
    count: str
    total_us: str
    avg_us: str
    min_us: str
    max_us: str
    path: str

    def line(self, with_name: bool = True) -> str:
        """`<baseline>: op_name op_type task_type count total_us avg_us`, as grep prints."""
        fields = (self.op_name, self.op_type, self.task_type, self.count, self.total_us)
        text = " ".join((*fields, self.avg_us))
        return f"{self.baseline}: {text}" if with_name else text

    def document(self) -> dict[str, object]:
        """The match as a JSON object: numbers as numbers, empty cells as null."""
        return {
            "baseline": self.baseline,
            "date": self.date,
            "model": self.model,
            "scenario": self.scenario,
            "op_name": self.op_name,
            "op_type": self.op_type,
            "task_type": self.task_type,
            "count": _number(self.count, int),
            "total_us": _number(self.total_us, float),
            "avg_us": _number(self.avg_us, float),
            "min_us": _number(self.min_us, float),
            "max_us": _number(self.max_us, float),
            "path": self.path,
        }


def search_archive(
    archive: Archive,
    pattern: re.Pattern[str] | None,
    on_problem: Callable[[str], None],
) -> Iterator[OperatorMatch]:
    """Every operator of every baseline whose op_name or op_type `pattern` finds (all of them
    when there is no pattern), oldest baseline first, in the order of its file."""
    for info in archive.baselines():
        yield from _search_baseline(info, pattern, on_problem)


def _search_baseline(
    info: BaselineInfo, pattern: re.Pattern[str] | None, on_problem: Callable[[str], None]
) -> Iterator[OperatorMatch]:
    path = info.operators_csv
    try:
        with path.open(encoding="utf-8", newline="") as table:
            reader = csv.DictReader(table)
            missing = [name for name in _SEARCHED if name not in (reader.fieldnames or ())]
            if missing:
                on_problem(f"{path}: no column {', '.join(missing)}; skipped")
                return
            for row in reader:
                if pattern is None or any(pattern.search(row[name] or "") for name in _SEARCHED):
                    cells = {name: row.get(name) or "" for name in _FIELDS}
                    yield OperatorMatch(
                        baseline=info.name,
                        date=info.date,
                        model=info.model,
                        scenario=info.scenario,
                        path=str(path),
                        **cells,
                    )
    except (OSError, UnicodeDecodeError, csv.Error) as failure:
        on_problem(f"{path}: cannot read ({failure}); skipped")


def _number(text: str, kind: type[int] | type[float]) -> int | float | None:
    number = usable_cell(text)  # None for text, inf, nan and past 64 bits
    if number is None:
        return None
    return kind(number) if kind is int else number
