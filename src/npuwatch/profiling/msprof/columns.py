"""The canonical column names of parsed profiling tables, defined once.

msprof and torch_npu have renamed their columns across releases (`Block Dim` → `Block Num`,
`Op Name` → `Name`, `Task Start Time` → `Task Start Time(us)` ...). Every parser maps the spellings
it knows onto the names below: snake_case, with the unit in the name (`_us` for microseconds,
`_kb`, `_mb`, `_pct`). A column no table knows keeps its content under `snake_case(header)`, so
`aic_mac_ratio` stays `aic_mac_ratio` and `cube_utilization(%)` becomes `cube_utilization_pct`.
Times are microseconds everywhere (msprof's unit); the milliseconds of communication.json are
converted on reading.
"""

from __future__ import annotations

import re

# Where and when
DEVICE_ID = "device_id"
"""NPU logical id (`Device_id`); missing (NA) for host rows (api_statistic writes `host`)."""
STEP = "step"
"""Training step (`Step Id`, `Step`, `Iteration ID`); NA when no step markers were recorded."""
MODEL_ID = "model_id"
MODEL_NAME = "model_name"
TASK_ID = "task_id"
STREAM_ID = "stream_id"
INFER_ID = "infer_id"
START_US = "start_us"
"""Absolute start time in µs since the epoch (float64, so about 0.25 µs resolution)."""
END_US = "end_us"
DURATION_US = "duration_us"
WAIT_US = "wait_us"
"""Gap between the end of the previous task and the start of this one."""
TIMESTAMP_US = "timestamp_us"

# What ran
OP_NAME = "op_name"
OP_TYPE = "op_type"
OP_STATE = "op_state"
TASK_TYPE = "task_type"
"""Accelerator core or task type, normalised: `AI Core` and `AI_CORE` are both `AI_CORE`."""
API_NAME = "api_name"
LEVEL = "level"
BLOCK_NUM = "block_num"
"""`Block Num`, formerly `Block Dim`."""
MIX_BLOCK_NUM = "mix_block_num"
HF32_ELIGIBLE = "hf32_eligible"
INPUT_SHAPES = "input_shapes"
"""Shapes of the input tensors, `;` between tensors (`81920,4096;8192,512`), quotes removed."""
INPUT_DATA_TYPES = "input_data_types"
INPUT_FORMATS = "input_formats"
OUTPUT_SHAPES = "output_shapes"
OUTPUT_DATA_TYPES = "output_data_types"
OUTPUT_FORMATS = "output_formats"
CONTEXT_ID = "context_id"

# Aggregates (op_statistic, api_statistic, communication_statistic, operator_table)
COUNT = "count"
TOTAL_US = "total_us"
AVG_US = "avg_us"
MIN_US = "min_us"
MAX_US = "max_us"
RATIO_PCT = "ratio_pct"
VARIANCE = "variance"

# Step trace (torch_npu step_trace_time.csv, msprof-analyze cluster_step_trace_time.csv)
COMPUTING_US = "computing_us"
COMMUNICATION_NOT_OVERLAPPED_US = "communication_not_overlapped_us"
OVERLAPPED_US = "overlapped_us"
COMMUNICATION_US = "communication_us"
FREE_US = "free_us"
STAGE_US = "stage_us"
BUBBLE_US = "bubble_us"
COMMUNICATION_NOT_OVERLAPPED_EXCLUDE_RECEIVE_US = "communication_not_overlapped_exclude_receive_us"
PREPARING_US = "preparing_us"
STEP_US = "step_us"
"""Time of one step: computing + communication not overlapped + free (torch_npu), or the
iteration time (msprof step_trace). Derived by the parser so that every reader agrees."""
RANK_TYPE = "type"
"""cluster_step_trace_time.csv: `rank` or `stage` rows."""
INDEX = "index"
"""cluster_step_trace_time.csv: the rank id, or the ranks of a stage (`(0, 1, 2, 3)`)."""
ITERATION_US = "iteration_us"

# Communication (communication.json)
GROUP = "group"
COMMUNICATION_KIND = "kind"
"""`collective` or `p2p`."""
RANK = "rank"
ELAPSE_US = "elapse_us"
TRANSIT_US = "transit_us"
SYNCHRONIZATION_US = "synchronization_us"
IDLE_US = "idle_us"

_UNITS = (("(%)", "_pct"), ("%", "_pct"), ("/s", "_per_s"))
_NOT_WORD = re.compile(r"[^0-9a-zA-Z]+")
_SPACE_BEFORE_PAREN = re.compile(r"\s+\(")


def header_key(name: str) -> str:
    """The spelling-insensitive key of a header: case, outer and repeated spaces ignored.

    `' Task Start Time (us)'` and `'Task Start Time(us)'` share the key `task start time(us)`.
    """
    name = _SPACE_BEFORE_PAREN.sub("(", name.strip().lstrip("\ufeff"))
    return " ".join(name.lower().split())


def snake_case(name: str) -> str:
    """The column of a header no table knows: `cube_utilization(%)` → `cube_utilization_pct`."""
    text = name.strip()
    for unit, replacement in _UNITS:
        text = text.replace(unit, replacement)
    return _NOT_WORD.sub("_", text).strip("_").lower() or "column"
