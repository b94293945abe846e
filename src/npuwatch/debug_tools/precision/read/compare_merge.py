"""msprobe's `multi_ranks_compare_merge_*.xlsx`, read into one compare table per rank.

A merge workbook turns the compare tables of several ranks sideways: one sheet per metric
(named after it), columns `NPU Name`, `rank0`, `rank1` …. Gathering every sheet back into
per-rank rows is this module's one job; the rows are those of every compare kind.
"""

from __future__ import annotations

import re
from pathlib import Path

from npuwatch.debug_tools.cell_values import header_cells, number, text_of
from npuwatch.debug_tools.precision.read.compare_rows import (
    SUMMARY_METRICS,
    TENSOR_METRICS,
    CompareRow,
    CompareTable,
)
from npuwatch.debug_tools.table_files import read_workbook
from npuwatch.parsers.problem_list import ProblemList

_MERGE_RANK = re.compile(r"^rank_?(\d+)$", re.IGNORECASE)


def read_merge_workbook(path: Path) -> list[CompareTable]:
    """A `multi_ranks_compare_merge_*.xlsx`: one table per rank, rows in the order of the
    first sheet, metrics gathered from every sheet (a sheet is named after its metric)."""
    problems = ProblemList(str(path))
    sheets = read_workbook(path, problems)
    names: dict[int, list[str]] = {}
    metrics: dict[int, dict[str, dict[str, float]]] = {}
    for title, rows in sheets.items():
        key = SUMMARY_METRICS.get(title.strip()) or TENSOR_METRICS.get(title.strip())
        if key is None:
            key = re.sub(r"\W+", "_", title.strip().lower())
        if not rows:
            continue
        header = header_cells(rows[0][1])
        if "NPU Name" not in header:
            problems.add(rows[0][0], f"sheet {title!r} has no `NPU Name` column; skipped")
            continue
        name_at = header.index("NPU Name")
        ranks = {
            position: int(found.group(1))
            for position, cell in enumerate(header)
            if (found := _MERGE_RANK.match(cell))
        }
        for line, cells in rows[1:]:
            name = text_of(cells[name_at]) if name_at < len(cells) else None
            if name is None:
                problems.add(line, f"sheet {title!r}: no NPU Name; row skipped")
                continue
            for position, rank in ranks.items():
                order = names.setdefault(rank, [])
                per_name = metrics.setdefault(rank, {})
                if name not in per_name:
                    order.append(name)
                    per_name[name] = {}
                value = number(cells[position]) if position < len(cells) else None
                if value is not None:
                    per_name[name][key] = value
    reported = problems.finish()
    if not names:
        missing = reported or [f"{path}:0: no sheet with NPU Name and rank columns"]
        return [CompareTable(str(path), "merge", 0, [], missing)]
    return [
        CompareTable(
            str(path),
            "merge",
            rank,
            [
                CompareRow(name, line, metrics[rank][name])
                for line, name in enumerate(names[rank], start=1)
            ],
            reported if i == 0 else [],
        )
        for i, rank in enumerate(sorted(names))
    ]
