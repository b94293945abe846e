"""Kernel rows: msprof `op_summary_*.csv` and torch_npu `kernel_details.csv`, one row per task.

torch_npu builds kernel_details from op_summary by renaming the first columns (`Op Name` →
`Name`, `OP Type` → `Type`, `Task Type` → `Accelerator Core`, `Task Start Time(us)` →
`Start Time(us)`, ...) and prepending `Step Id`; both spellings, every era of the header
(`Task Start Time` without a unit, `Block Dim` → `Block Num`, with or without `Device_id`,
`Model Name`, `OP State`) and the PMU columns after `Context ID` are read into the same frame.
"""

from __future__ import annotations

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

KERNEL_SPEC = TableSpec(
    kind="op_summary/kernel_details",
    aliases={
        "Device_id": c.DEVICE_ID,
        "Step Id": c.STEP,
        "Model Name": c.MODEL_NAME,
        "Model ID": c.MODEL_ID,
        "Task ID": c.TASK_ID,
        "Stream ID": c.STREAM_ID,
        "Infer ID": c.INFER_ID,
        "Op Name": c.OP_NAME,
        "Name": c.OP_NAME,
        "OP Type": c.OP_TYPE,
        "Type": c.OP_TYPE,
        "OP State": c.OP_STATE,
        "Task Type": c.TASK_TYPE,
        "Accelerator Core": c.TASK_TYPE,
        "Task Start Time(us)": c.START_US,
        "Task Start Time": c.START_US,
        "Start Time(us)": c.START_US,
        "Task Duration(us)": c.DURATION_US,
        "Duration(us)": c.DURATION_US,
        "Task Wait Time(us)": c.WAIT_US,
        "Wait Time(us)": c.WAIT_US,
        "Block Num": c.BLOCK_NUM,
        "Block Dim": c.BLOCK_NUM,
        "Mix Block Num": c.MIX_BLOCK_NUM,
        "Mix Block Dim": c.MIX_BLOCK_NUM,
        "HF32 Eligible": c.HF32_ELIGIBLE,
        "Input Shapes": c.INPUT_SHAPES,
        "Input Data Types": c.INPUT_DATA_TYPES,
        "Input Formats": c.INPUT_FORMATS,
        "Output Shapes": c.OUTPUT_SHAPES,
        "Output Data Types": c.OUTPUT_DATA_TYPES,
        "Output Formats": c.OUTPUT_FORMATS,
        "Context ID": c.CONTEXT_ID,
    },
    required=(c.OP_NAME, c.DURATION_US),
    numeric_required=(c.DURATION_US,),
    floats=frozenset({c.START_US, c.DURATION_US, c.WAIT_US}),
    integers=frozenset(
        {
            c.DEVICE_ID,
            c.STEP,
            c.MODEL_ID,
            c.TASK_ID,
            c.STREAM_ID,
            c.INFER_ID,
            c.BLOCK_NUM,
            c.MIX_BLOCK_NUM,
        }
    ),
)
"""op_summary and kernel_details share one spec: the union of their spellings."""


def parse_kernels(data: bytes | str, source: str) -> ParsedTable:
    """Kernel rows of an op_summary or kernel_details CSV, with canonical columns.

    Needs a name and a duration column; `start_us`, `wait_us`, `block_num`, `task_type` ... are
    NA when the file has no such column. PMU columns keep snake_case names (`aic_mac_ratio`,
    `aicore_time_us`, `cube_utilization_pct`).
    """
    return read_table(data, source, KERNEL_SPEC)
