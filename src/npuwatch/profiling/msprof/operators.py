"""The per-operator table of a run: what the summary ranks and the baseline archive stores."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from npuwatch.profiling.msprof import columns as c

if TYPE_CHECKING:
    from npuwatch.profiling.msprof.run import ProfileRun

OPERATOR_COLUMNS = [c.OP_NAME, c.OP_TYPE, c.TASK_TYPE, c.COUNT, c.TOTAL_US, c.AVG_US]
OPERATOR_COLUMNS += [c.MIN_US, c.MAX_US]
"""The columns of `operator_table`, in order. Stable: the baseline archive is a CSV of them."""
_KEYS = [c.OP_NAME, c.OP_TYPE, c.TASK_TYPE]


def operator_table(run: ProfileRun) -> pd.DataFrame:
    """Time per operator of one run, the biggest total first.

    Columns (`OPERATOR_COLUMNS`), one row per distinct (op_name, op_type, task_type):

    - `op_name`: the kernel name (`aclnnMatmul_MatMulCommon_MatMulV2`, `Cast66`);
    - `op_type`: its operator type (`MatMulV2`, `Cast`);
    - `task_type`: the core it ran on (`AI_CORE`, `AI_VECTOR_CORE`, `AI_CPU`, `MIX_AIC`,
      `HCCL`, ...), normalised to upper case with `_`;
    - `count`: number of launches (int);
    - `total_us`, `avg_us`, `min_us`, `max_us`: device duration in µs (float).

    Missing names, types and task types are empty strings, so every row has a key. Sorted by
    total_us descending, then op_name, op_type, task_type ascending (so the order is stable).
    When the run has no kernels but has an op_statistic, that is aggregated instead, per
    op_type and core type, with op_name = op_type (min/max are those of the statistic).
    """
    if not run.kernels.empty:
        return aggregate_kernels(run.kernels)
    if not run.op_statistic.empty:
        return _from_op_statistic(run.op_statistic)
    return _empty()


def aggregate_kernels(kernels: pd.DataFrame) -> pd.DataFrame:
    """The operator table of kernel rows (any frame with op_name/op_type/task_type/duration_us)."""
    frame = _keys(kernels)
    frame[c.DURATION_US] = kernels[c.DURATION_US].astype("float64")
    grouped = frame.groupby(_KEYS, sort=False)[c.DURATION_US]
    table = grouped.agg(["count", "sum", "mean", "min", "max"]).reset_index()
    table.columns = pd.Index(OPERATOR_COLUMNS)
    return _finish(table)


def combine_operator_tables(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Several operator tables (one per rank) as one: counts and totals added, min of the mins,
    max of the maxes, avg recomputed."""
    parts = [table for table in tables if not table.empty]
    if not parts:
        return _empty()
    frame = pd.concat(parts, ignore_index=True)
    grouped = frame.groupby(_KEYS, sort=False)
    table = grouped.agg(
        count=(c.COUNT, "sum"),
        total_us=(c.TOTAL_US, "sum"),
        min_us=(c.MIN_US, "min"),
        max_us=(c.MAX_US, "max"),
    ).reset_index()
    table[c.AVG_US] = table[c.TOTAL_US] / table[c.COUNT].where(table[c.COUNT] > 0)
    return _finish(table[OPERATOR_COLUMNS])


def _from_op_statistic(statistic: pd.DataFrame) -> pd.DataFrame:
    frame = statistic.copy()
    frame[c.OP_NAME] = frame[c.OP_TYPE]
    frame = _keys(frame).join(frame[[c.COUNT, c.TOTAL_US, c.MIN_US, c.MAX_US]])
    frame[c.COUNT] = frame[c.COUNT].fillna(0)
    frame[c.AVG_US] = 0.0
    return combine_operator_tables([frame[OPERATOR_COLUMNS]])


def _keys(frame: pd.DataFrame) -> pd.DataFrame:
    keys: pd.DataFrame = pd.DataFrame(index=frame.index)
    for column in _KEYS:
        values = frame[column] if column in frame.columns else pd.Series("", index=frame.index)
        keys[column] = values.fillna("").astype(str)
    return keys


def _finish(table: pd.DataFrame) -> pd.DataFrame:
    table = table.sort_values(
        [c.TOTAL_US, *_KEYS], ascending=[False, True, True, True], kind="mergesort"
    ).reset_index(drop=True)
    table[c.COUNT] = table[c.COUNT].astype("int64")
    for column in (c.TOTAL_US, c.AVG_US, c.MIN_US, c.MAX_US):
        table[column] = table[column].astype("float64")
    return table


def _empty() -> pd.DataFrame:
    table = pd.DataFrame({column: pd.Series([], dtype=object) for column in OPERATOR_COLUMNS})
    return _finish(table)
