"""torch_npu `operator_details.csv`: host and device time of each PyTorch operator.

Header from torch_npu's `_operator_view_parser.py` (no real file was found): `Name,Input Shapes,
Call Stack,Host Self Duration(us),Host Total Duration(us),Device Self Duration(us),Device Total
Duration(us),Device Self Duration With AICore(us),Device Total Duration With AICore(us)`.
"""

from __future__ import annotations

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable, TableSpec, read_table

_DURATIONS = {
    "Host Self Duration(us)": "host_self_us",
    "Host Total Duration(us)": "host_total_us",
    "Device Self Duration(us)": "device_self_us",
    "Device Total Duration(us)": "device_total_us",
    "Device Self Duration With AICore(us)": "device_self_aicore_us",
    "Device Total Duration With AICore(us)": "device_total_aicore_us",
}

OPERATOR_DETAILS_SPEC = TableSpec(
    kind="operator_details",
    aliases={
        "Name": c.OP_NAME,
        "Input Shapes": c.INPUT_SHAPES,
        "Call Stack": "call_stack",
        **_DURATIONS,
    },
    required=(c.OP_NAME,),
    floats=frozenset(_DURATIONS.values()),
    core_types=frozenset(),
)


def parse_operator_details(data: bytes | str, source: str) -> ParsedTable:
    """PyTorch operators (`aten::...`) with their host and device durations in µs."""
    return read_table(data, source, OPERATOR_DETAILS_SPEC)
