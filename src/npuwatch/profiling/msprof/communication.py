"""Collective and point-to-point communication: torch_npu `communication.json` and
msprof-analyze `cluster_communication.json`, flattened to one row per operation (and rank).

communication.json is `{"step<N>": {"collective"|"p2p": {"<op>@<group>": {"Communication Time
Info": {...}, "Communication Bandwidth Info": {<transport>: {...}}}}}}`; the cluster file nests
the same records under a rank group (`"(0, 1)"`), a step, the operation and the rank. Times are
converted from ms to µs (`elapse_us`, `transit_us`, `wait_us`, `synchronization_us`,
`idle_us`); per transport (`RDMA`, `HCCS`, `PCIE`, `SDMA` ...) the columns are
`<transport>_transit_size_mb`, `<transport>_transit_us` and `<transport>_bandwidth_gb_per_s`.
The synthesized `Total Op Info` entries are left out (they are sums of the rows).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from npuwatch.bounded_numbers import fitting_int
from npuwatch.json_input import load_json
from npuwatch.parsers.table_numbers import numbers_of, usable_cell, usable_numbers
from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable

_TIME_INFO = "Communication Time Info"
_BANDWIDTH_INFO = "Communication Bandwidth Info"
_TOTAL = "Total Op Info"
_MILLISECONDS = {
    "Elapse Time(ms)": c.ELAPSE_US,
    "Transit Time(ms)": c.TRANSIT_US,
    "Wait Time(ms)": c.WAIT_US,
    "Synchronization Time(ms)": c.SYNCHRONIZATION_US,
    "Idle Time(ms)": c.IDLE_US,
}
_RATIOS = {"Wait Time Ratio": "wait_ratio", "Synchronization Time Ratio": "synchronization_ratio"}
_STEP_NUMBER = re.compile(r"(\d+)$")
COLUMNS = [
    "rank_group",
    c.RANK,
    c.STEP,
    c.COMMUNICATION_KIND,
    c.OP_NAME,
    c.GROUP,
    c.START_US,
    *_MILLISECONDS.values(),
    *_RATIOS.values(),
]
"""The fixed columns; the per-transport ones follow them."""


def empty_communication() -> pd.DataFrame:
    return _frame([])


def parse_communication(data: bytes | str, source: str) -> ParsedTable:
    """Rows of a communication.json or cluster_communication.json; a file that is not valid
    JSON (truncated, still being written) or has no operations is reported as a problem."""
    try:
        document = load_json(data)
    except (ValueError, UnicodeDecodeError) as failure:
        return ParsedTable(empty_communication(), [f"{source}: not valid JSON ({failure})"])
    if not isinstance(document, dict):
        return ParsedTable(empty_communication(), [f"{source}: expected a JSON object"])
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for key, value in document.items():
        if not isinstance(value, dict):
            problems.append(f"{source}: {key!r} is not an object; skipped")
        elif key.startswith("("):
            _cluster_group(key, value, rows)
        else:
            _step(key, value, rows)
    if not rows and not problems:
        problems.append(f"{source}: no communication operations")
    return ParsedTable(_frame(rows), problems)


def _cluster_group(group: str, steps: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
    for step, operations in steps.items():
        if not isinstance(operations, dict):
            continue
        for operation, ranks in operations.items():
            if operation == _TOTAL or not isinstance(ranks, dict):
                continue
            for rank, record in ranks.items():
                if isinstance(record, dict):
                    row = _row(operation, record)
                    row.update({"rank_group": group, c.RANK: _integer(rank), c.STEP: step})
                    rows.append(row)


def _step(step: str, kinds: Mapping[str, Any], rows: list[dict[str, Any]]) -> None:
    for kind, operations in kinds.items():
        if not isinstance(operations, dict):
            continue
        for operation, record in operations.items():
            if operation == _TOTAL or not isinstance(record, dict):
                continue
            row = _row(operation, record)
            row.update({c.STEP: step, c.COMMUNICATION_KIND: kind})
            rows.append(row)


def _row(operation: str, record: Mapping[str, Any]) -> dict[str, Any]:
    name, _, group = operation.partition("@")
    row: dict[str, Any] = {c.OP_NAME: name, c.GROUP: group or None}
    times = record.get(_TIME_INFO)
    if isinstance(times, dict):
        row[c.START_US] = _number(times.get("Start Timestamp(us)"))
        for key, column in _MILLISECONDS.items():
            milliseconds = _number(times.get(key))
            row[column] = None if milliseconds is None else milliseconds * 1000.0
        for key, column in _RATIOS.items():
            row[column] = _number(times.get(key))
    links = record.get(_BANDWIDTH_INFO)
    if isinstance(links, dict):
        for transport, info in links.items():
            if not isinstance(info, dict):
                continue
            prefix = transport.lower()
            row[f"{prefix}_transit_size_mb"] = _number(info.get("Transit Size(MB)"))
            transit_ms = _number(info.get("Transit Time(ms)"))
            row[f"{prefix}_transit_us"] = None if transit_ms is None else transit_ms * 1000.0
            row[f"{prefix}_bandwidth_gb_per_s"] = _number(info.get("Bandwidth(GB/s)"))
    return row


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    extra = [column for column in frame.columns if column not in COLUMNS]
    frame = frame[COLUMNS + extra]
    frame[c.STEP] = frame[c.STEP].map(_step_number).astype("Int64")
    ranks = usable_numbers(numbers_of(frame[c.RANK]))
    frame[c.RANK] = ranks.where(ranks == ranks.round()).astype("Int64")
    numeric = [column for column in [*COLUMNS[6:], *extra] if column in frame.columns]
    for column in numeric:
        frame[column] = usable_numbers(numbers_of(frame[column]))
    return frame


def _step_number(key: object) -> int | None:
    """`step12` → 12; the bare `step` of a profile without step markers → None."""
    match = _STEP_NUMBER.search(key) if isinstance(key, str) else None
    return fitting_int(match[1]) if match else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return usable_cell(value)


def _integer(value: str) -> int | None:
    return fitting_int(value.strip()) if value.strip().isdigit() else None
