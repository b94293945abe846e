"""msprof `task_time_*.csv`, in either of the two headers its sources disagree on.

The export config writes a per-task statistic (`Time(%),Time(us),Count,Avg(us),...,Type,API,
Task ID,Op Name,Stream ID`); the current documentation shows one row per task
(`Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),
task_stop(us)`). No real file was found, so both are read into one frame: the statistic fills
`total_us`, `count`, `avg_us` ...; the per-task form fills `duration_us`, `start_us`, `end_us`.
"""

from __future__ import annotations

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

TASK_TIME_SPEC = TableSpec(
    kind="task_time",
    aliases={
        "Device_id": c.DEVICE_ID,
        "kernel_name": c.OP_NAME,
        "Op Name": c.OP_NAME,
        "kernel_type": c.TASK_TYPE,
        "Type": c.TASK_TYPE,
        "API": c.API_NAME,
        "stream_id": c.STREAM_ID,
        "Stream ID": c.STREAM_ID,
        "task_id": c.TASK_ID,
        "Task ID": c.TASK_ID,
        "task_time(us)": c.DURATION_US,
        "task_start(us)": c.START_US,
        "task_stop(us)": c.END_US,
        "Time(%)": "time_pct",
        "Time(us)": c.TOTAL_US,
        "Count": c.COUNT,
        "Avg(us)": c.AVG_US,
        "Min(us)": c.MIN_US,
        "Max(us)": c.MAX_US,
        "Waiting(us)": "waiting_us",
        "Running(us)": "running_us",
        "Pending(us)": "pending_us",
    },
    required=(c.OP_NAME,),
    numeric_required=(c.DURATION_US, c.TOTAL_US),
    floats=frozenset(
        {
            c.DURATION_US,
            c.START_US,
            c.END_US,
            "time_pct",
            c.TOTAL_US,
            c.AVG_US,
            c.MIN_US,
            c.MAX_US,
            "waiting_us",
            "running_us",
            "pending_us",
        }
    ),
    integers=frozenset({c.DEVICE_ID, c.STREAM_ID, c.TASK_ID, c.COUNT}),
)


def parse_task_time(data: bytes | str, source: str) -> ParsedTable:
    """Tasks (or per-task statistics) of a task_time CSV, whichever header it has."""
    return read_table(data, source, TASK_TIME_SPEC)
