"""Device memory over time: msprof `npu_mem_*.csv`.

Header `event,ddr(KB),hbm(KB),memory(KB),timestamp(us)`: one row per sample of an application's
(or the whole device's) memory use, in KB, with the absolute time of the sample in µs.
"""

from __future__ import annotations

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

NPU_MEM_SPEC = TableSpec(
    kind="npu_mem",
    aliases={
        "Device_id": c.DEVICE_ID,
        "event": "event",
        "ddr(KB)": "ddr_kb",
        "hbm(KB)": "hbm_kb",
        "memory(KB)": "memory_kb",
        "timestamp(us)": c.TIMESTAMP_US,
    },
    required=(c.TIMESTAMP_US,),
    numeric_required=(c.TIMESTAMP_US,),
    floats=frozenset({"ddr_kb", "hbm_kb", "memory_kb", c.TIMESTAMP_US}),
    integers=frozenset({c.DEVICE_ID}),
    core_types=frozenset(),
)


def parse_npu_mem(data: bytes | str, source: str) -> ParsedTable:
    """Memory samples: `event` (`app`/`device`), `ddr_kb`, `hbm_kb`, `memory_kb`, `timestamp_us`."""
    return read_table(data, source, NPU_MEM_SPEC)
