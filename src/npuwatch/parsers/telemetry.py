"""Telemetry entries: device readings, profiling operators and the debugging tools' findings
(parsers/debug_entries.py), kept in the journal as records.

The journal stores a record as its original text plus the few fields queries filter on. A log
record's original is the line it was read from; a telemetry entry has no line, so its original
is one compact JSON object with everything it says, and `telemetry_record` builds the record
back from that text, the way `parse_bytes` builds a log record back from its line. This keeps
one journal, one cursor per sink, one `grep`, for logs and telemetry alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from npuwatch.json_input import load_json
from npuwatch.parsers.debug_entries import DEBUG_KIND, debug_record
from npuwatch.parsers.npu_smi import NpuChip, NpuProcess, NpuSmiReport
from npuwatch.records import Record

DEVICE_KIND = "npu-smi"
PROFILING_KIND = "profiling"
TELEMETRY_KINDS = frozenset({DEVICE_KIND, PROFILING_KIND, DEBUG_KIND})

DEVICE_LOGGER = "NPU-SMI"
PROFILING_LOGGER = "PROFILING"

_ENTRIES_PER_POLL = 1000
"""Offsets of device entries are `poll time in µs × 1000 + position`: unique per reading (a host
has at most a few dozen chips), ordered in time, and the same when a reading is sent again."""


def device_records(report: NpuSmiReport, when_us: int) -> list[Record]:
    """One record per chip of an `npu-smi info` report, taken at `when_us`."""
    by_chip: dict[tuple[int, int], list[NpuProcess]] = {}
    for process in report.processes:
        by_chip.setdefault((process.npu_id, process.chip_id), []).append(process)
    records = []
    for position, chip in enumerate(report.chips[:_ENTRIES_PER_POLL]):
        reading = _reading(chip, by_chip.get((chip.npu_id, chip.chip_id), ()))
        if report.driver_version is not None:
            reading["driver_version"] = report.driver_version
        original = json.dumps(reading, separators=(",", ":"), ensure_ascii=False)
        record = _device_record(original, reading)
        record.timestamp_us = when_us
        record.offset = when_us * _ENTRIES_PER_POLL + position
        record.end_offset = record.offset + 1
        records.append(record)
    return records


def profiling_records(
    operators: Iterable[Mapping[Any, Any]], run: str, device: int | None, when_us: int
) -> list[Record]:
    """One record per operator of a profiling run (`operators`: rows of the run's operator
    table as plain JSON values, slowest first), all at `when_us` (when the run was taken);
    offsets are positions."""
    records = []
    for position, row in enumerate(operators):
        fields: dict[str, Any] = {"run": run}
        for column, name in _OPERATOR_FIELDS.items():
            value = row.get(column)
            if value is not None:  # None: a cell the table lacked
                fields[name] = value
        if device is not None:
            fields["device"] = device
        original = json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
        record = _profiling_record(original, fields)
        record.timestamp_us = when_us
        record.offset = position
        record.end_offset = position + 1
        records.append(record)
    return records


def telemetry_record(original: str, kind: str) -> Record:
    """The record a telemetry entry's original text stands for (an unreadable one is kept as
    an unparsed record, like any line no format matches)."""
    try:
        fields = load_json(original)
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        record = Record(original, "unparsed")
        record.message = original
        return record
    if kind == DEVICE_KIND:
        return _device_record(original, fields)
    if kind == DEBUG_KIND:
        return debug_record(original, fields)
    return _profiling_record(original, fields)


def device_message(reading: dict[str, Any]) -> str:
    """One line an operator reads at a glance: which chip, its health and its load."""
    parts = [f"health {reading.get('health')}"]
    if reading.get("temperature_celsius") is not None:
        parts.append(f"{reading['temperature_celsius']:g} °C")
    if reading.get("power_watts") is not None:
        parts.append(f"{reading['power_watts']:g} W")
    if reading.get("aicore_ratio") is not None:
        parts.append(f"AI Core {reading['aicore_ratio']:.0%}")
    for label in ("hbm", "memory"):
        pair = reading.get(label) or {}
        used, total = pair.get("used_bytes"), pair.get("total_bytes")
        if used is not None and total:
            parts.append(f"{label.upper() if label == 'hbm' else 'memory'} {used >> 20}/"
                         f"{total >> 20} MiB ({used / total:.0%})")  # fmt: skip
    return f"NPU {reading.get('id')} chip {reading.get('chip')} ({reading.get('name')}): " + (
        ", ".join(parts)
    )


def _device_record(original: str, reading: dict[str, Any]) -> Record:
    record = Record(original, DEVICE_KIND)
    record.level = "INFO" if reading.get("health") == "OK" else "WARNING"
    record.logger = DEVICE_LOGGER
    record.message = device_message(reading)
    record.device = reading.get("id")
    record.ascend_extra = {"npu": reading}
    return record


def _profiling_record(original: str, fields: dict[str, Any]) -> Record:
    record = Record(original, PROFILING_KIND)
    record.level = "INFO"
    record.logger = PROFILING_LOGGER
    total_ms = float(fields.get("total_us") or 0) / 1000
    record.message = (
        f"{fields.get('name')} ({fields.get('type')}, {fields.get('task_type')}): "
        f"{fields.get('count')} launches, {total_ms:.3f} ms in run {fields.get('run')}"
    )
    record.device = fields.pop("device", None)
    record.ascend_extra = {"profiling": fields}
    return record


_OPERATOR_FIELDS = {
    "op_name": "name",
    "op_type": "type",
    "task_type": "task_type",
    "count": "count",
    "total_us": "total_us",
    "avg_us": "avg_us",
    "min_us": "min_us",
    "max_us": "max_us",
}
"""Operator table column → field of `ascend.profiling`."""


def _reading(chip: NpuChip, processes: Any) -> dict[str, Any]:
    reading: dict[str, Any] = {
        "id": chip.npu_id,
        "chip": chip.chip_id,
        "name": chip.name,
        "health": chip.health,
        "power_watts": chip.power_watts,
        "temperature_celsius": chip.temperature_celsius,
        "aicore_ratio": chip.aicore_ratio,
        "hbm": _memory(chip.hbm_used_bytes, chip.hbm_total_bytes),
        "memory": _memory(chip.memory_used_bytes, chip.memory_total_bytes),
        "bus_id": chip.bus_id,
        "device_id": chip.device_id,
        "phy_id": chip.phy_id,
        "processes": [
            {
                "pid": process.pid,
                "name": process.name,
                "memory_bytes": process.memory_bytes,
                "container_pid": process.container_pid,
            }
            for process in processes
        ]
        or None,
    }
    return {key: value for key, value in reading.items() if value is not None}


def _memory(used: int | None, total: int | None) -> dict[str, int] | None:
    # A card without HBM (310) or with an unreadable pair (`NA`) has no memory object at all;
    # `0 / 0` (a 910B's DDR column) is kept, so that the document says what npu-smi said.
    if used is None and total is None:
        return None
    pair = {"used_bytes": used, "total_bytes": total}
    return {key: value for key, value in pair.items() if value is not None}
