"""The API accuracy checker's CSVs (`msprobe acc_check`, formerly run_ut), read into rows.

- `accuracy_checking_result_*.csv`: one row per API, `API name`, `Forward Test Success`,
  `Backward Test Success`, `Message` (and an optional `Traceback callstack info`);
- `accuracy_checking_details_*.csv`: one row per compared output, with Chinese metric column
  names (余弦相似度 cosine, 最大绝对误差 max abs error …), `Status` and `Message`.

Success cells are read as pass/warning/error whatever the spelling (`pass`, `True`, `TRUE`,
`error`, `False`, `SKIP` → skipped, `N/A` → none). See ../shared/design/formats/msprobe.md §5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npuwatch.debug_tools.cell_values import number, text_of
from npuwatch.debug_tools.table_files import read_table
from npuwatch.parsers.problem_list import ProblemList

DETAIL_METRICS = {
    "余弦相似度": "cosine",
    "最大绝对误差": "max_abs_err",
    "双千指标": "thousandth_ratio",
    "相对误差最大值": "max_rel_err",
    "相对误差平均值": "mean_rel_err",
}
"""The details columns kept, by the key npuwatch gives them."""


@dataclass(frozen=True)
class ApiResult:
    """One API of the result CSV: its forward and backward outcome."""

    api: str
    line: int
    forward: str | None
    """`pass`, `warning`, `error`, `skip`, or None when not tested."""
    backward: str | None
    message: str | None = None

    @property
    def failed(self) -> bool:
        return "error" in (self.forward, self.backward)


@dataclass(frozen=True)
class ApiDetail:
    """One compared output of the details CSV."""

    name: str
    line: int
    status: str | None
    metrics: dict[str, float] = field(default_factory=dict)
    message: str | None = None


@dataclass(frozen=True)
class AccCheckFile:
    """What one acc_check CSV holds: results or details, and the problems met."""

    source: str
    results: list[ApiResult] = field(default_factory=list)
    details: list[ApiDetail] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_acc_check(path: Path) -> AccCheckFile:
    """An `accuracy_checking_result_*.csv` or `accuracy_checking_details_*.csv`."""
    problems = ProblemList(str(path))
    rows = read_table(path, problems)
    if not rows:
        return AccCheckFile(str(path), problems=problems.finish() or [f"{path}:0: empty file"])
    header = [str(cell).strip() if cell is not None else "" for cell in rows[0][1]]
    while header and not header[-1]:
        header.pop()
    lowered = {name.lower(): position for position, name in reversed(list(enumerate(header)))}
    if "api name" not in lowered:
        problems.add(rows[0][0], "no `API name` column: not an acc_check CSV")
        return AccCheckFile(str(path), problems=problems.finish())
    results: list[ApiResult] = []
    details: list[ApiDetail] = []
    for line, cells in rows[1:]:
        if len(cells) < len(header) or any(str(c).strip() for c in cells[len(header) :]):
            problems.add(line, f"{len(cells)} fields where the header has {len(header)}; skipped")
            continue

        def cell(column: str, cells: list[Any] = cells) -> Any:
            position = lowered.get(column.lower())
            return cells[position] if position is not None else None

        name = text_of(cell("API name"))
        if name is None:
            problems.add(line, "no API name; row skipped")
            continue
        if "status" in lowered:
            details.append(
                ApiDetail(
                    name=name,
                    line=line,
                    status=outcome(cell("Status")),
                    metrics={
                        key: value
                        for column, key in DETAIL_METRICS.items()
                        if (value := number(cell(column))) is not None
                    },
                    message=text_of(cell("Message")),
                )
            )
        else:
            results.append(
                ApiResult(
                    api=name,
                    line=line,
                    forward=outcome(cell("Forward Test Success")),
                    backward=outcome(cell("Backward Test Success")),
                    message=text_of(cell("Message")),
                )
            )
    return AccCheckFile(str(path), results, details, problems.finish())


def outcome(cell: Any) -> str | None:
    """A success/status cell as `pass`, `warning`, `error`, `skip`, or None."""
    text = text_of(cell)
    if text is None:
        return None
    word = text.lower()
    if word in {"pass", "true", "yes"}:
        return "pass"
    if word in {"error", "false", "no", "fail", "failed"}:
        return "error"
    if word == "warning":
        return "warning"
    if word.startswith("skip"):
        return "skip"
    return None
