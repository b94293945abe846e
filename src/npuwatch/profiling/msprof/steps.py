"""Step times: torch_npu `step_trace_time.csv`, msprof-analyze `cluster_step_trace_time.csv` and
msprof `step_trace_*.csv`.

torch_npu's file has had three headers (`Preparing` added, then `Device_id` put first); the
cluster file adds `Type` (`rank` or `stage`) and `Index` (the rank, or the ranks of a stage) and,
in current releases, `DP/PP/TP Index`. All times are µs. Each parser adds `step_us`, the time of
the step as msprof-analyze counts it: computing + communication not overlapped + free for
torch_npu and the cluster file, `Iteration Time(us)` for msprof.
"""

from __future__ import annotations

import pandas as pd

from npuwatch.parsers.table_numbers import numbers_of, usable_numbers
from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

_STEP_PARTS = (c.COMPUTING_US, c.COMMUNICATION_NOT_OVERLAPPED_US, c.FREE_US)

STEP_TRACE_TIME_SPEC = TableSpec(
    kind="step_trace_time",
    aliases={
        "Device_id": c.DEVICE_ID,
        "Step": c.STEP,
        "Type": c.RANK_TYPE,
        "Index": c.INDEX,
        "Computing": c.COMPUTING_US,
        "Communication(Not Overlapped)": c.COMMUNICATION_NOT_OVERLAPPED_US,
        "Overlapped": c.OVERLAPPED_US,
        "Communication": c.COMMUNICATION_US,
        "Free": c.FREE_US,
        "Stage": c.STAGE_US,
        "Bubble": c.BUBBLE_US,
        "Communication(Not Overlapped and Exclude Receive)": (
            c.COMMUNICATION_NOT_OVERLAPPED_EXCLUDE_RECEIVE_US
        ),
        "Preparing": c.PREPARING_US,
        "DP Index": "dp_index",
        "PP Index": "pp_index",
        "TP Index": "tp_index",
    },
    required=(c.COMPUTING_US,),
    numeric_required=(c.COMPUTING_US,),
    floats=frozenset(
        {
            c.COMPUTING_US,
            c.COMMUNICATION_NOT_OVERLAPPED_US,
            c.OVERLAPPED_US,
            c.COMMUNICATION_US,
            c.FREE_US,
            c.STAGE_US,
            c.BUBBLE_US,
            c.COMMUNICATION_NOT_OVERLAPPED_EXCLUDE_RECEIVE_US,
            c.PREPARING_US,
        }
    ),
    integers=frozenset({c.DEVICE_ID, c.STEP, "dp_index", "pp_index", "tp_index"}),
    core_types=frozenset(),
)

MSPROF_STEP_TRACE_SPEC = TableSpec(
    kind="step_trace",
    aliases={
        "Device_id": c.DEVICE_ID,
        "Model ID": c.MODEL_ID,
        "Iteration ID": c.STEP,
        "FP Start(us)": "fp_start_us",
        "FP Start": "fp_start_us",
        "BP End(us)": "bp_end_us",
        "BP End": "bp_end_us",
        "Iteration End(us)": "iteration_end_us",
        "Iteration End": "iteration_end_us",
        "Iteration Time(us)": c.ITERATION_US,
        "FP to BP Time(us)": "fp_to_bp_us",
        "Iteration Refresh(us)": "iteration_refresh_us",
        "Data Aug Bound(us)": "data_aug_bound_us",
        "Reduce Start": "reduce_start_us",
        "Reduce Start(us)": "reduce_start_us",
        "Reduce Duration(us)": "reduce_duration_us",
    },
    required=(c.ITERATION_US,),
    numeric_required=(c.ITERATION_US,),
    floats=frozenset(
        {
            "fp_start_us",
            "bp_end_us",
            "iteration_end_us",
            c.ITERATION_US,
            "fp_to_bp_us",
            "iteration_refresh_us",
            "data_aug_bound_us",
            "reduce_start_us",
            "reduce_duration_us",
        }
    ),
    integers=frozenset({c.DEVICE_ID, c.MODEL_ID, c.STEP}),
    core_types=frozenset(),
)


def parse_step_trace_time(data: bytes | str, source: str) -> ParsedTable:
    """Steps of torch_npu's step_trace_time.csv (any of its three headers), or of the cluster
    file (then `type` is `rank` or `stage` and `index` says which), plus `step_us`.

    `step` is NA when the profile recorded no step markers (an empty `Step` cell).
    """
    parsed = read_table(data, source, STEP_TRACE_TIME_SPEC)
    frame = parsed.frame
    frame[c.STEP_US] = frame[list(_STEP_PARTS)].fillna(0.0).sum(axis=1).astype("float64")
    return ParsedTable(frame, parsed.problems)


def parse_msprof_step_trace(data: bytes | str, source: str) -> ParsedTable:
    """Iterations of msprof's step_trace_*.csv (FP/BP marks, iteration time), plus `step_us`."""
    parsed = read_table(data, source, MSPROF_STEP_TRACE_SPEC)
    frame = parsed.frame
    frame[c.STEP_US] = frame[c.ITERATION_US].astype("float64")
    return ParsedTable(frame, parsed.problems)


def rank_rows(cluster: pd.DataFrame) -> pd.DataFrame:
    """The `rank` rows of a cluster_step_trace_time frame, with `rank` as an integer column."""
    kinds = cluster[c.RANK_TYPE].fillna("").astype(str).str.lower()
    rows = cluster[kinds == "rank"].copy()
    ranks = usable_numbers(numbers_of(rows[c.INDEX]))
    rows[c.RANK] = ranks.where(ranks == ranks.round()).astype("Int64")
    result: pd.DataFrame = rows.reset_index(drop=True)
    return result
