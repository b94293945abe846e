"""msprobe / ptdbg compare tables, `compare_result_*.xlsx|csv`, read into a `CompareTable`.

Covers `compare_result_*`, `compare_result_rank{N}_*` and `debug_compare_result_*` in every
mode: real-data ("tensor") headers of current msprobe (`Cosine` … `Result`) and of 2023 ptdbg
(`NPU Tensor Dtype`, verdict `Accuracy Reached or Not`), summary-mode headers (`Max diff` …
`NormRelativeErr`, relative errors written in %), md5 headers (`NPU MD5`, `BENCH MD5`). The
mode is told by the header; the other compare kinds have modules of their own.
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.debug_tools.cell_values import (
    fit_row,
    header_cells,
    metrics_of,
    text_of,
    verdict_of,
)
from npuwatch.debug_tools.precision.read.compare_rows import (
    SUMMARY_METRICS,
    TENSOR_METRICS,
    CompareRow,
    CompareTable,
    rank_of,
)
from npuwatch.debug_tools.table_files import is_xlsx, read_table
from npuwatch.parsers.problem_list import ProblemList


def read_compare_table(path: Path) -> CompareTable:
    """A `compare_result_*` / `debug_compare_result_*` table (.xlsx or .csv) of any mode."""
    problems = ProblemList(str(path))
    rows = read_table(path, problems)
    if not rows:
        if not problems.finish():
            problems.add(0, "empty: no header row")
        return CompareTable(str(path), "tensor", rank_of(path), [], problems.finish())
    header = header_cells(rows[0][1])
    index = {name: position for position, name in reversed(list(enumerate(header)))}
    if "NPU Name" not in index:
        problems.add(rows[0][0], "no `NPU Name` column: not an msprobe compare result")
        return CompareTable(str(path), "tensor", rank_of(path), [], problems.finish())
    if "NPU MD5" in index:
        kind, metric_names = "md5", {}
    elif "Max diff" in index:
        kind, metric_names = "summary", SUMMARY_METRICS
    else:
        kind, metric_names = "tensor", TENSOR_METRICS
    verdict_column = next((c for c in ("Result", "Accuracy Reached or Not") if c in index), None)
    table_rows: list[CompareRow] = []
    for line, cells in rows[1:]:
        fitted = fit_row(cells, len(header), line, problems, is_xlsx(path))
        if fitted is None:
            continue
        values = dict(zip(header, fitted, strict=True))
        name = text_of(values.get("NPU Name"))
        if name is None:
            problems.add(line, "no NPU Name; row skipped")
            continue
        message = text_of(values.get("Err_message"))
        verdict = verdict_of(values.get(verdict_column)) if verdict_column else None
        if verdict is None and message and "no bench data" in message.lower():
            verdict = "unmatched"
        table_rows.append(
            CompareRow(
                name=name,
                line=line,
                metrics=metrics_of(values, metric_names),
                verdict=verdict,
                bench_name=text_of(values.get("Bench Name")),
                message=message,
            )
        )
    return CompareTable(
        str(path), kind, rank_of(path), table_rows, problems.finish(), verdict_column
    )
