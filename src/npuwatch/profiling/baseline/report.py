"""The comparison and the archive for people (aligned text, coloured on a TTY) and for scripts.

The JSON document of a comparison is stable: `schema_version`, `baseline` and `current` (where
each side came from), `rules`, `regressed`, `counts` per status, `total` and `operators` (the
fields of ROW_COLUMNS, null where a side has no value), and `opprof_figures` (null unless both
sides are msOpProf output with key figures: opprof_figures.FigureComparison.to_dict). The CSV is
the operators, with the header ROW_COLUMNS, then opprof_figures.CSV_COLUMNS when figures were
compared. Times are µs, percentages are percent (20.0 is +20 %), figure deltas points.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from npuwatch.profiling.baseline.archive import BaselineInfo
from npuwatch.profiling.baseline.compare import (
    PER_STEP,
    ROW_COLUMNS,
    SLOWER,
    STATUSES,
    Comparison,
)
from npuwatch.profiling.baseline.opprof_figures import (
    CSV_COLUMNS as FIGURE_COLUMNS,
)
from npuwatch.profiling.baseline.opprof_figures import (
    FigureComparison,
    csv_cells,
    figure_lines,
    verdict_line,
)
from npuwatch.profiling.baseline.rules import BY_NAME
from npuwatch.profiling.baseline.snapshot import OPPROF_LAYOUT, Snapshot
from npuwatch.profiling.msprof.values import plain_value
from npuwatch.terminal import Palette

SCHEMA_VERSION = 1
DEFAULT_TOP = 20
"""Rows of the text table when --top is not given (JSON and CSV have them all)."""
_SHOWN_REGRESSIONS = 5


@dataclass(frozen=True)
class CompareReport:
    """A comparison with what it compared: the stored baseline and the current profile."""

    comparison: Comparison
    info: BaselineInfo
    baseline: Snapshot
    current: Snapshot
    figures: FigureComparison | None = None
    """msOpProf key figures, when both sides have them."""

    @property
    def regressed(self) -> bool:
        """An operator or the total slower, or an operator's key figures worse."""
        return self.comparison.regressed or bool(self.figures and self.figures.regressed)


def as_document(report: CompareReport, top: int | None = None) -> dict[str, Any]:
    comparison = report.comparison
    return {
        "schema_version": SCHEMA_VERSION,
        "baseline": {
            "name": report.info.name,
            "date": report.info.date,
            "model": report.info.model,
            "scenario": report.info.scenario,
            **_side(report.baseline),
        },
        "current": _side(report.current),
        "rules": asdict(comparison.rules),
        "regressed": report.regressed,
        "counts": comparison.counts(),
        "total": {key: plain_value(value, 3) for key, value in asdict(comparison.total).items()},
        "operators": _records(_top(comparison.rows, top)),
        "opprof_figures": report.figures.to_dict(top) if report.figures else None,
    }


def as_json(report: CompareReport, top: int | None = None) -> str:
    return json.dumps(as_document(report, top), indent=2, ensure_ascii=False) + "\n"


def as_csv(
    comparison: Comparison, top: int | None = None, figures: FigureComparison | None = None
) -> str:
    rows = _top(comparison.rows, top).copy()
    for column in ("gates", "launches_changed"):
        rows[column] = rows[column].map({True: "true", False: "false"})
    columns = list(ROW_COLUMNS)
    if figures:  # beside each operator's times, by op_name (empty with --by type)
        cells = csv_cells(figures)
        for column in FIGURE_COLUMNS:
            rows[column] = [cells.get(name, {}).get(column) for name in rows["op_name"]]
        columns += FIGURE_COLUMNS
    text: str = rows[columns].to_csv(index=False, float_format="%.3f", lineterminator="\n")
    return text


def as_text(report: CompareReport, palette: Palette, top: int | None = DEFAULT_TOP) -> str:
    comparison, rules = report.comparison, report.comparison.rules
    lines = [
        palette.bold(f"{report.current.source} against baseline {report.info.name}"),
        f"  baseline  {_describe(report.baseline)}",
        f"  current   {_describe(report.current)}",
        f"  rule      slower or faster: the average time per launch moved by more than "
        f"{rules.threshold_pct:g}%;",
        f"            SLOWER fails the gate (at least {rules.min_time_us:g} µs of baseline "
        "time), slower does not",
        "",
        f"{'STATUS':<11} {'Δ TOTAL µs':>12} {'Δ AVG':>8} {'AVG µs BEFORE → NOW':>23} "
        f"{'LAUNCHES':>11}  {'OPERATOR' if rules.by == BY_NAME else 'OPERATOR TYPE'}",
    ]
    rows = _top(comparison.rows, top)
    lines += [_row_line(row, palette) for row in rows.itertuples(index=False)]
    hidden = len(comparison.rows) - len(rows)
    if hidden > 0:
        lines.append(palette.dim(f"... {hidden} more (--top 0 shows every operator)"))
    if report.figures:
        lines += ["", *figure_lines(report.figures, palette, top)]
    lines += ["", *_summary(report, palette)]
    return "\n".join(lines) + "\n"


def list_document(archive: str, infos: Sequence[BaselineInfo]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "archive": archive,
        "baselines": [
            {
                "name": info.name,
                "date": info.date,
                "model": info.model,
                "scenario": info.scenario,
                "operators": info.operators,
                "total_us": info.total_us,
                "rank_steps": info.rank_steps,
                "ranks": info.ranks,
                "cann_version": info.cann_version,
                "torch_npu_version": info.torch_npu_version,
                "source": info.source,
                "created_utc": info.created_utc or None,
                "path": str(info.path),
            }
            for info in infos
        ],
    }


def list_text(infos: Sequence[BaselineInfo]) -> str:
    header = ("NAME", "DATE", "MODEL", "SCENARIO", "OPS", "TOTAL ms", "CANN", "SOURCE")
    table = [header] + [
        (
            info.name,
            info.date,
            info.model,
            info.scenario,
            "?" if info.operators is None else str(info.operators),
            "?" if info.total_us is None else f"{info.total_us / 1000:.1f}",
            info.cann_version or "-",
            info.source or "?",
        )
        for info in infos
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    numeric = {4, 5}
    lines = []
    for row in table:
        cells = [
            cell.rjust(width) if i in numeric else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def operator_label(op_name: str, op_type: str, task_type: str) -> str:
    """`name (type, core)`, or `type (core)` when there is no name or it is the type."""
    if not op_name or op_name == op_type:
        return f"{op_type} ({task_type})" if task_type else op_type
    return f"{op_name} ({', '.join(part for part in (op_type, task_type) if part)})"


def _side(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "source": snapshot.source,
        "cann_version": snapshot.cann_version,
        "torch_npu_version": snapshot.torch_npu_version,
        "ranks": snapshot.ranks,
        "rank_steps": snapshot.rank_steps,
        "operators": len(snapshot.table),
        "total_us": round(snapshot.total_us, 3),
    }


def _describe(snapshot: Snapshot) -> str:
    parts = [snapshot.source]
    if snapshot.cann_version:
        parts.append(f"CANN {snapshot.cann_version}")
    if snapshot.torch_npu_version:
        parts.append(f"torch_npu {snapshot.torch_npu_version}")
    if snapshot.ranks is not None:
        parts.append(f"{snapshot.ranks} rank{'s' if snapshot.ranks != 1 else ''}")
    steps = snapshot.rank_steps
    if snapshot.layout == OPPROF_LAYOUT:
        # One operator's launches, not a training run: there are no steps to count.
        launches = snapshot.launch_count
        parts.append(f"msOpProf, {launches} launch{'es' if launches != 1 else ''}")
    else:
        parts.append(f"{steps} rank-steps" if steps else "steps unknown")
    return ", ".join(parts)


def _row_line(row: Any, palette: Palette) -> str:
    status = str(row.status)
    shown = status.upper() if row.gates else status
    if row.gates:
        shown_coloured = palette.level("ERROR", f"{shown:<11}")
    elif status in (SLOWER, "appeared"):
        shown_coloured = palette.level("WARNING", f"{shown:<11}")
    elif status == "faster":
        shown_coloured = palette.level("EVENT", f"{shown:<11}")
    else:
        shown_coloured = f"{shown:<11}"
    pct = "" if _missing(row.delta_avg_pct) else f"{row.delta_avg_pct:+.1f}%"
    averages = f"{_us(row.baseline_avg_us):>10} → {_us(row.current_avg_us):<10}"
    before, after = _count(row.baseline_count), _count(row.current_count)
    launches = before if before == after else f"{before}→{after}"
    label = operator_label(str(row.op_name), str(row.op_type), str(row.task_type))
    return (
        f"{shown_coloured} {row.delta_total_us:>+12.1f} {pct:>8} {averages:>23} "
        f"{launches:>11}  {label}"
    )


def _summary(report: CompareReport, palette: Palette) -> list[str]:
    comparison = report.comparison
    total, rules = comparison.total, comparison.rules
    basis = "per step of one rank" if total.basis == PER_STEP else "of the whole profile"
    pct = "" if total.delta_pct is None else f" ({total.delta_pct:+.1f}%)"
    lines = [
        f"total operator time {basis}: {total.baseline_us:.1f} → {total.current_us:.1f} µs"
        f"{pct}: {total.status.upper() if total.gates else total.status}"
    ]
    if total.baseline_step_us is not None and total.current_step_us is not None:
        step_pct = "" if total.step_delta_pct is None else f" ({total.step_delta_pct:+.1f}%)"
        lines.append(
            f"step time (mean of ranks): {total.baseline_step_us:.1f} → "
            f"{total.current_step_us:.1f} µs{step_pct}, reported only"
        )
    counts = comparison.counts()
    lines.append("operators: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    figures = [verdict_line(report.figures, palette)] if report.figures else []
    if not comparison.regressed:
        time = "time " if report.regressed else ""
        lines.append(palette.bold(f"no {time}regression beyond {rules.threshold_pct:g}%"))
        return lines + figures
    reasons = [
        f"{operator_label(row.op_name, row.op_type, row.task_type)} {row.delta_avg_pct:+.1f}%"
        if not _missing(row.delta_avg_pct)
        else operator_label(row.op_name, row.op_type, row.task_type)
        for row in comparison.regressions.head(_SHOWN_REGRESSIONS).itertuples(index=False)
    ]
    more = len(comparison.regressions) - len(reasons)
    if more > 0:
        reasons.append(f"{more} more")
    if total.gates:
        reasons.append(f"total {basis}{pct}")
    lines.append(
        palette.level("ERROR", f"REGRESSION beyond {rules.threshold_pct:g}%: ") + "; ".join(reasons)
    )
    return lines + figures


def _top(rows: pd.DataFrame, top: int | None) -> pd.DataFrame:
    return rows if not top else rows.head(top)


def _records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {column: plain_value(value, 3) for column, value in zip(ROW_COLUMNS, values, strict=True)}
        for values in rows[ROW_COLUMNS].itertuples(index=False, name=None)
    ]


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _us(value: Any) -> str:
    return "-" if _missing(value) else f"{value:.1f}"


def _count(value: Any) -> str:
    return "0" if _missing(value) else str(int(value))
