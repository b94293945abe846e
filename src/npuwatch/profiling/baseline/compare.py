"""A profile against a baseline, operator by operator: `npuwatch baseline compare`.

What is compared, and why:

- An operator is the same when its (op_name, op_type, task_type) is (`--by name`), or its op_type
  (`--by type`, all kernels of the type added up). It is `slower` or `faster` when its average
  time per launch moved by more than the threshold, `unchanged` otherwise; `appeared` when only
  the current profile has it, `disappeared` when only the baseline has it. The average per
  launch does not change with how many steps were profiled; totals do.
- Launch counts are reported (`baseline_count`, `current_count`, `launches_changed`), never
  judged on their own: more launches per step show in the total. With step counts on both sides,
  `launches_changed` compares launches per step of one rank; without, the raw counts.
- The gate (exit 1): an operator `slower` whose baseline total time is at least `min_time_us`
  (so that the jitter of a 2 µs kernel does not fail a build), or the total slower than the
  threshold. The total is the operator time of one step of one rank when both sides know their
  steps (`per_step`), else of the whole profile (`per_run`, meaningful for profiles of equal
  length). Appeared and disappeared operators gate only through the total.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from npuwatch.profiling.baseline.rules import BY_NAME, BY_TYPE, Rules
from npuwatch.profiling.baseline.snapshot import Snapshot
from npuwatch.profiling.msprof import columns as c

SLOWER, FASTER, UNCHANGED, APPEARED, DISAPPEARED = (
    "slower", "faster", "unchanged", "appeared", "disappeared",
)  # fmt: skip
STATUSES = (SLOWER, FASTER, UNCHANGED, APPEARED, DISAPPEARED)
PER_STEP, PER_RUN = "per_step", "per_run"
ROW_COLUMNS = [
    c.OP_NAME, c.OP_TYPE, c.TASK_TYPE, "status", "gates",
    "baseline_count", "current_count", "launches_changed",
    "baseline_avg_us", "current_avg_us", "delta_avg_us", "delta_avg_pct",
    "baseline_total_us", "current_total_us", "delta_total_us",
]  # fmt: skip
"""The columns of `Comparison.rows`, in order: the CSV header and the JSON fields."""
_NAME_KEYS = [c.OP_NAME, c.OP_TYPE, c.TASK_TYPE]
_DECIMALS = 3
"""Totals are compared to the nanosecond, the precision of the archive's CSV, so that a profile
compared with its own baseline differs by exactly nothing."""


@dataclass(frozen=True)
class Total:
    """The operator time of both profiles, per step of one rank when both know their steps."""

    basis: str
    """PER_STEP or PER_RUN."""
    baseline_us: float
    current_us: float
    delta_us: float
    delta_pct: float | None
    status: str
    gates: bool
    baseline_step_us: float | None
    """Mean step time (wall clock of a step, not only operators); reported, not judged."""
    current_step_us: float | None
    step_delta_pct: float | None


@dataclass(frozen=True)
class Comparison:
    """Every operator of either side (the biggest change of total time first, then the biggest
    operator), and the total."""

    rows: pd.DataFrame
    """ROW_COLUMNS."""
    total: Total
    rules: Rules

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows that fail the gate."""
        failing: pd.DataFrame = self.rows[self.rows["gates"]]
        return failing

    @property
    def regressed(self) -> bool:
        return bool(self.rows["gates"].any()) or self.total.gates

    def counts(self) -> dict[str, int]:
        """How many operators have each status (every status, in STATUSES order)."""
        found = self.rows["status"].value_counts()
        return {status: int(found.get(status, 0)) for status in STATUSES}


def compare(baseline: Snapshot, current: Snapshot, rules: Rules) -> Comparison:
    """`current` against `baseline` under `rules`."""
    keys = _NAME_KEYS if rules.by == BY_NAME else [c.OP_TYPE]
    merged = pd.merge(
        _operators(baseline.table, rules.by),
        _operators(current.table, rules.by),
        on=keys,
        how="outer",
        suffixes=("_baseline", "_current"),
        indicator=True,
        sort=False,
    )
    rows = _side_by_side(merged, rules.by)
    both = merged["_merge"] == "both"
    rows["status"] = _statuses(rows, merged["_merge"], rules.threshold_pct)
    rows["launches_changed"] = ~both | _launches_changed(rows, baseline, current)
    rows["gates"] = (rows["status"] == SLOWER) & (
        rows["baseline_total_us"].fillna(0.0) >= rules.min_time_us
    )
    rows["_change"] = rows["delta_total_us"].abs()
    rows["_size"] = rows[["baseline_total_us", "current_total_us"]].max(axis=1)
    rows = rows.sort_values(
        ["_change", "_size", c.OP_TYPE, c.OP_NAME, c.TASK_TYPE],
        ascending=[False, False, True, True, True],
        kind="mergesort",
    )
    rows = rows[ROW_COLUMNS].reset_index(drop=True)
    return Comparison(rows, _total(baseline, current, rules.threshold_pct), rules)


def _side_by_side(merged: pd.DataFrame, by: str) -> pd.DataFrame:
    """The key, and the count, average and total of each side with their deltas."""
    rows: pd.DataFrame = pd.DataFrame(index=merged.index)
    rows[c.OP_NAME] = merged[c.OP_NAME] if by == BY_NAME else ""
    rows[c.OP_TYPE] = merged[c.OP_TYPE]
    if by == BY_NAME:
        rows[c.TASK_TYPE] = merged[c.TASK_TYPE]
    else:
        task_type = merged[f"{c.TASK_TYPE}_current"]
        rows[c.TASK_TYPE] = task_type.fillna(merged[f"{c.TASK_TYPE}_baseline"])
    for side in ("baseline", "current"):
        rows[f"{side}_count"] = merged[f"{c.COUNT}_{side}"].astype("Int64")
        rows[f"{side}_avg_us"] = merged[f"{c.AVG_US}_{side}"]
        rows[f"{side}_total_us"] = merged[f"{c.TOTAL_US}_{side}"]
    rows["delta_avg_us"] = rows["current_avg_us"] - rows["baseline_avg_us"]
    base_avg = rows["baseline_avg_us"].where(rows["baseline_avg_us"] > 0)
    rows["delta_avg_pct"] = 100.0 * rows["delta_avg_us"] / base_avg
    # An operator one side lacks took no time there.
    before, after = rows["baseline_total_us"].fillna(0.0), rows["current_total_us"].fillna(0.0)
    rows["delta_total_us"] = after - before
    return rows


def by_type(table: pd.DataFrame) -> pd.DataFrame:
    """The operator table added up per op_type; task_type lists the cores it ran on."""
    grouped = table.groupby(c.OP_TYPE, sort=False)
    typed: pd.DataFrame = grouped.agg(
        count=(c.COUNT, "sum"),
        total_us=(c.TOTAL_US, "sum"),
        task_type=(c.TASK_TYPE, _joined),
    ).reset_index()
    typed[c.OP_NAME] = ""
    typed[c.TOTAL_US] = typed[c.TOTAL_US].round(_DECIMALS)
    typed[c.AVG_US] = typed[c.TOTAL_US] / typed[c.COUNT].where(typed[c.COUNT] > 0)
    return typed


def _operators(table: pd.DataFrame, by: str) -> pd.DataFrame:
    if by == BY_TYPE:
        typed: pd.DataFrame = by_type(table)[
            [c.OP_TYPE, c.TASK_TYPE, c.COUNT, c.TOTAL_US, c.AVG_US]
        ]
        return typed
    frame: pd.DataFrame = table[[*_NAME_KEYS, c.COUNT, c.TOTAL_US]].copy()
    frame[c.TOTAL_US] = frame[c.TOTAL_US].round(_DECIMALS)
    # The average of the launches, not the stored (rounded) avg_us, so both sides agree.
    frame[c.AVG_US] = frame[c.TOTAL_US] / frame[c.COUNT].where(frame[c.COUNT] > 0)
    return frame


def _joined(task_types: pd.Series) -> str:
    return ",".join(sorted({str(value) for value in task_types if value}))


def _statuses(rows: pd.DataFrame, present: pd.Series, threshold_pct: float) -> pd.Series:
    pct = rows["delta_avg_pct"]
    # An operator that took no time before and does now has no percentage, but is slower.
    grew = pct.isna() & (rows["delta_avg_us"] > 0)
    status = pd.Series(UNCHANGED, index=rows.index, dtype=object)
    status[(pct > threshold_pct) | grew] = SLOWER
    status[pct < -threshold_pct] = FASTER
    status[present == "right_only"] = APPEARED
    status[present == "left_only"] = DISAPPEARED
    return status


def _launches_changed(rows: pd.DataFrame, baseline: Snapshot, current: Snapshot) -> pd.Series:
    before = rows["baseline_count"].astype("float64")
    after = rows["current_count"].astype("float64")
    if baseline.rank_steps and current.rank_steps:
        before, after = before / baseline.rank_steps, after / current.rank_steps
    return (after - before).abs() > 1e-9


def _total(baseline: Snapshot, current: Snapshot, threshold_pct: float) -> Total:
    per_step = bool(baseline.rank_steps and current.rank_steps)
    before = baseline.per_step_us if per_step else baseline.total_us
    after = current.per_step_us if per_step else current.total_us
    assert before is not None and after is not None, "per_step needs steps on both sides"
    pct = _pct(before, after)
    status = UNCHANGED
    if pct is not None and pct > threshold_pct:
        status = SLOWER
    elif pct is not None and pct < -threshold_pct:
        status = FASTER
    return Total(
        basis=PER_STEP if per_step else PER_RUN,
        baseline_us=before,
        current_us=after,
        delta_us=after - before,
        delta_pct=pct,
        status=status,
        gates=status == SLOWER,
        baseline_step_us=baseline.step_us,
        current_step_us=current.step_us,
        step_delta_pct=_pct(baseline.step_us, current.step_us),
    )


def _pct(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before <= 0:
        return None
    return 100.0 * (after - before) / before
