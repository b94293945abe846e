"""Tables that msprof aggregates itself: op_statistic, api_statistic, communication_statistic.

One row per operator type (op_statistic, per core type), per host API (api_statistic) or per
collective operation type (communication_statistic, formerly hccl_statistic), with count, total,
min, average and maximum times in µs. `Device_id` is prepended by newer exports and is `host`
for host rows of api_statistic (read as NA); `Model Name` appears in the whole-network variant.
"""

from __future__ import annotations

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

_TIMES = frozenset({c.TOTAL_US, c.AVG_US, c.MIN_US, c.MAX_US, c.RATIO_PCT})

OP_STATISTIC_SPEC = TableSpec(
    kind="op_statistic",
    aliases={
        "Device_id": c.DEVICE_ID,
        "Model Name": c.MODEL_NAME,
        "OP Type": c.OP_TYPE,
        "Core Type": c.TASK_TYPE,
        "Count": c.COUNT,
        "Total Time(us)": c.TOTAL_US,
        "Avg Time(us)": c.AVG_US,
        "Min Time(us)": c.MIN_US,
        "Max Time(us)": c.MAX_US,
        "Ratio(%)": c.RATIO_PCT,
    },
    required=(c.OP_TYPE, c.TOTAL_US),
    numeric_required=(c.TOTAL_US,),
    floats=_TIMES,
    integers=frozenset({c.DEVICE_ID, c.COUNT}),
)

API_STATISTIC_SPEC = TableSpec(
    kind="api_statistic",
    aliases={
        "Device_id": c.DEVICE_ID,
        "Level": c.LEVEL,
        "API Name": c.API_NAME,
        "Time(us)": c.TOTAL_US,
        "Count": c.COUNT,
        "Avg(us)": c.AVG_US,
        "Min(us)": c.MIN_US,
        "Max(us)": c.MAX_US,
        "Variance": c.VARIANCE,
    },
    required=(c.API_NAME, c.TOTAL_US),
    numeric_required=(c.TOTAL_US,),
    floats=_TIMES | {c.VARIANCE},
    integers=frozenset({c.DEVICE_ID, c.COUNT}),
)

COMMUNICATION_STATISTIC_SPEC = TableSpec(
    kind="communication_statistic",
    aliases={
        "Device_id": c.DEVICE_ID,
        "OP Type": c.OP_TYPE,
        "Count": c.COUNT,
        "Total Time(us)": c.TOTAL_US,
        "Min Time(us)": c.MIN_US,
        "Avg Time(us)": c.AVG_US,
        "Max Time(us)": c.MAX_US,
        "Ratio(%)": c.RATIO_PCT,
    },
    required=(c.OP_TYPE, c.TOTAL_US),
    numeric_required=(c.TOTAL_US,),
    floats=_TIMES,
    integers=frozenset({c.DEVICE_ID, c.COUNT}),
)


def parse_op_statistic(data: bytes | str, source: str) -> ParsedTable:
    """Per operator type and core type: count, total/avg/min/max µs, share of the total."""
    return read_table(data, source, OP_STATISTIC_SPEC)


def parse_api_statistic(data: bytes | str, source: str) -> ParsedTable:
    """Per host API (`aclrtMemcpy`, `aclnnMatmul` ...): level, count, total/avg/min/max µs."""
    return read_table(data, source, API_STATISTIC_SPEC)


def parse_communication_statistic(data: bytes | str, source: str) -> ParsedTable:
    """Per collective operation type: count and total/avg/min/max µs."""
    return read_table(data, source, COMMUNICATION_STATISTIC_SPEC)
