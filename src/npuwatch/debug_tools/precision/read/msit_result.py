"""msit's offline compare `result_*.csv`, read into a compare table.

msit names its columns differently from msprobe (`NPUDump`, `CosineSimilarity`,
`IsPrecisionError`, a `GroundTruth` of `*` for an NPU-only operator) and repeats `DataType`
and `Address` (the first is the NPU's, the second the ground truth's: the first of a name is
taken). The rows it gives are those of every compare kind (compare_rows).
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.debug_tools.cell_values import fit_row, header_cells, metrics_of, text_of
from npuwatch.debug_tools.precision.read.compare_rows import (
    MSIT_METRICS,
    CompareRow,
    CompareTable,
    rank_of,
)
from npuwatch.debug_tools.table_files import is_xlsx, read_table
from npuwatch.parsers.problem_list import ProblemList


def read_msit_result(path: Path) -> CompareTable:
    """An msit offline compare `result_*.csv` (one row per compared tensor)."""
    problems = ProblemList(str(path))
    rows = read_table(path, problems)
    header = header_cells(rows[0][1]) if rows else []
    index = {name: position for position, name in reversed(list(enumerate(header)))}
    if "NPUDump" not in index:
        if rows:
            problems.add(rows[0][0], "no `NPUDump` column: not an msit compare result")
        return CompareTable(str(path), "msit", rank_of(path), [], problems.finish())
    table_rows = []
    for line, cells in rows[1:]:
        fitted = fit_row(cells, len(header), line, problems, is_xlsx(path))
        if fitted is None:
            continue
        name = text_of(fitted[index["NPUDump"]])
        if name is None:
            problems.add(line, "no NPUDump; row skipped")
            continue
        tensor = text_of(fitted[index["TensorIndex"]]) if "TensorIndex" in index else None
        values = {column: fitted[position] for column, position in index.items()}
        error = text_of(values.get("IsPrecisionError"))
        verdict = None if error is None else ("error" if error.upper() == "YES" else "pass")
        if "GroundTruth" in index and text_of(fitted[index["GroundTruth"]]) == "*":
            verdict = "unmatched"  # an NPU-only operator: nothing to compare it with
        table_rows.append(
            CompareRow(
                name=name,
                line=line,
                metrics=metrics_of(values, MSIT_METRICS),
                verdict=verdict,
                bench_name=tensor,
                message=text_of(values.get("CompareFailReason")),
            )
        )
    column = "IsPrecisionError" if "IsPrecisionError" in index else None
    return CompareTable(str(path), "msit", rank_of(path), table_rows, problems.finish(), column)
