"""The findings of one debugging-tool output, as journal entries and the metrics' figures.

What `npuwatch precision|monitor|sanitizer summary` find in an output, cut into the entries the
agent journals (parsers/debug_entries.py) and `scan` reports beside the logs: each entry
has a `key` that names what it is about (so that an output imported again adds only new
findings), and the figures the metrics show (sinks/prometheus/debug_metrics.py). The agent works
this out in a child process (agent/debug_digest.py), so that it never loads pandas; `scan`, a
command that ends, works it out in its own.

Which digest an output gets is the chooser's to say (`npuwatch.debug_tools.DEBUG_TOOLS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.parsers.debug_entries import (
    MONITOR_LOGGER,
    PRECISION_LOGGER,
    SANITIZER_LOGGER,
    debug_record,
    entry_text,
)
from npuwatch.records import Record

if TYPE_CHECKING:
    from npuwatch.debug_tools.monitor.summary import StepGroup

FAILURES_PER_COMPARE = 20
"""Failing operators journaled per compare, the first failure included: after the first
few, the rest say the same (the error propagates) and `npuwatch precision summary` lists all."""


@dataclass(frozen=True)
class OutputDigest:
    """One output, as far as the agent needs it."""

    kind: str
    entries: list[dict[str, Any]]
    figures: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def entry_records(
    entries: Iterable[Mapping[str, Any]], when_us: int, first_offset: int
) -> list[Record]:
    """The records of `entries`, taken at `when_us`, at offsets from `first_offset` on (the
    `key` is what the importer remembers, not part of the entry)."""
    records = []
    for position, entry in enumerate(entries, start=first_offset):
        fields = {
            name: value for name, value in entry.items() if name != "key" and value is not None
        }
        record = debug_record(entry_text(fields), fields)
        record.timestamp_us = when_us
        record.offset = position
        record.end_offset = position + 1
        records.append(record)
    return records


# -- precision compare, overflow check, accuracy checker ------------------------------------


def digest_precision(path: Path) -> OutputDigest:
    from npuwatch.debug_tools.precision.files import read_precision_inputs  # noqa: PLC0415 - pandas
    from npuwatch.debug_tools.precision.judge import Thresholds  # noqa: PLC0415
    from npuwatch.debug_tools.precision.summary import summarise_precision  # noqa: PLC0415

    summary = summarise_precision(read_precision_inputs(path), Thresholds())
    entries: list[dict[str, Any]] = []
    first_failures: list[list[Any]] = []
    for compare in summary.comparisons:
        failing = [op for op in compare.operators if op.verdict == "error"]
        failed = compare.counts.get("error", 0)
        where = f"{compare.source}: {failed} of {len(compare.operators)} operators fail"
        for operator in failing[:FAILURES_PER_COMPARE]:
            first = compare.first_failure is not None and operator == compare.first_failure
            detail = _error_text(compare.error_metric, operator.error)
            entries.append(
                {
                    "key": f"compare|{compare.label}|{operator.operator}",
                    "logger": PRECISION_LOGGER,
                    "level": "ERROR" if first else "WARNING",
                    "message": (
                        f"precision {'first failure' if first else 'failure'} on rank "
                        f"{compare.rank}: {operator.operator}"
                        + (f" in {operator.layer}" if operator.layer else "")
                        + (f" {operator.direction}" if operator.direction else "")
                        + detail
                        + (f"; {where}" if first else "")
                    ),
                    "tool": "precision",
                    "what": "first_failure" if first else "failure",
                    "rank": compare.rank,
                    "source": compare.source,
                    "compare": compare.kind,
                    "operator": operator.operator,
                    "layer": operator.layer,
                    "direction": operator.direction,
                    "index": operator.index,
                    "error": operator.error,
                    "error_metric": compare.error_metric,
                    "tensor": operator.first_bad_tensor,
                }
            )
        if compare.first_failure is not None:
            failure = compare.first_failure
            first_failures.append(
                [compare.rank, failure.operator, failure.layer or "", compare.source]
            )
    overflow_nodes: dict[str, int] = {}
    for anomaly in summary.anomalies:
        overflow_nodes[str(anomaly.rank)] = overflow_nodes.get(str(anomaly.rank), 0) + 1
        entries.append(
            {
                "key": f"overflow|{anomaly.source}|{anomaly.rank}|{anomaly.op_name}",
                "logger": PRECISION_LOGGER,
                "level": "ERROR",
                "message": f"overflow on rank {anomaly.rank}: Inf/NaN first in "
                f"{anomaly.op_name} ({', '.join(anomaly.bad_outputs[:4]) or 'no statistics'}; "
                f"{anomaly.nodes} anomaly node{'s' * (anomaly.nodes != 1)})",
                "tool": "overflow",
                "what": "overflow",
                "rank": anomaly.rank,
                "source": anomaly.source,
                "operator": anomaly.op_name,
                "nodes": anomaly.nodes,
                "bad_outputs": anomaly.bad_outputs,
                "stack": anomaly.stack[:5],
            }
        )
    for api in summary.failed_apis:
        entries.append(
            {
                "key": f"acc_check|{api.source}|{api.api}",
                "logger": PRECISION_LOGGER,
                "level": "WARNING",
                "message": f"accuracy check failed: {api.api} ({' and '.join(api.directions)})"
                + (f": {api.message}" if api.message else ""),
                "tool": "acc_check",
                "what": "failed_api",
                "source": api.source,
                "api": api.api,
                "directions": api.directions,
                "details": api.details[:5],
            }
        )
    figures = {"first_failures": first_failures, "overflow_nodes": overflow_nodes}
    return OutputDigest("precision", entries, figures, summary.problems)


def _error_text(metric: str | None, error: float | None) -> str:
    return "" if metric is None or error is None else f" ({metric} {error:.4g})"


# -- training monitor ------------------------------------------------------------------------


def digest_monitor(path: Path) -> OutputDigest:
    from npuwatch.debug_tools.monitor.summary import summarise_monitor_folder  # noqa: PLC0415

    summary = summarise_monitor_folder(path)  # one file at a time: the child stays small
    entries: list[dict[str, Any]] = []
    anomalies: list[list[Any]] = []
    for group in summary.anomalies:
        anomalies.append([f"{group.data_type} {group.metric}", group.rank, group.rule, group.count])
        level = "ERROR" if group.rule == "AnomalyNan" else "WARNING"
        for step in group.steps:
            entries.append(
                _step_entry(
                    group,
                    step,
                    level,
                    f"monitor anomaly {group.rule} on rank {group.rank} at step {step}: "
                    f"{group.data_type} {group.metric}",
                )
            )
    nan_values: dict[int, int] = {}
    for group in summary.nans:
        nan_values[group.rank] = nan_values.get(group.rank, 0) + group.count
        for step in group.steps:
            entries.append(
                _step_entry(
                    group,
                    step,
                    "ERROR",
                    f"monitor NaN/inf on rank {group.rank} at step {step}: {group.data_type} "
                    f"statistics ({group.metric})",
                )
            )
    for group in summary.spikes:
        entries.append(
            _step_entry(
                group,
                group.first_step,
                "WARNING",
                f"monitor spike on rank {group.rank} at step {group.first_step}: "
                f"{group.data_type} {group.metric} up to {group.largest or 0:.3g}× its median "
                f"({group.count} spike{'s' * (group.count != 1)})",
            )
        )
    ranks: list[list[Any]] = []
    for rank in summary.ranks:
        ranks.append([rank.rank, rank.grad_norm, nan_values.get(rank.rank, 0), rank.last_step])
        norm = "unknown" if rank.grad_norm is None else f"{rank.grad_norm:.6g}"
        entries.append(
            {
                "key": f"rank|{rank.rank}|{rank.last_step}",
                "logger": MONITOR_LOGGER,
                "level": "INFO",
                "message": f"monitor rank {rank.rank} at step {rank.last_step}: grad norm {norm}"
                + (f" ({rank.grad_norm_type})" if rank.grad_norm is not None else "")
                + (f"; first trouble: {rank.first_trouble}" if rank.first_trouble else ""),
                "tool": "monitor",
                "what": "rank_summary",
                "rank": rank.rank,
                "step": rank.last_step,
                "grad_norm": rank.grad_norm,
                "grad_norm_type": rank.grad_norm_type,
                "nan_values": nan_values.get(rank.rank, 0),
                "first_trouble": rank.first_trouble or None,
                "first_trouble_step": rank.first_trouble_step,
            }
        )
    figures = {"anomalies": anomalies, "ranks": ranks}
    return OutputDigest("monitor", entries, figures, summary.problems)


def _step_entry(group: StepGroup, step: int, level: str, message: str) -> dict[str, Any]:
    names = group.names[:3]
    more = len(group.names) - len(names)
    return {
        "key": f"{group.kind}|{group.data_type}|{group.metric}|{group.rank}|{group.rule}|{step}",
        "logger": MONITOR_LOGGER,
        "level": level,
        "message": f"{message} ({', '.join(names)}{f' and {more} more' if more > 0 else ''})",
        "tool": "monitor",
        "what": group.kind,
        "rank": None if group.rank < 0 else group.rank,
        "step": step,
        "rule": group.rule,
        "data_type": group.data_type,
        "metric": group.metric,
        "names": group.names,
        "largest": group.largest,
    }


# -- msSanitizer and msaicerr ----------------------------------------------------------------


def digest_sanitizer(path: Path) -> OutputDigest:
    from npuwatch.debug_tools.sanitizer.read import read_sanitizer_report  # noqa: PLC0415
    from npuwatch.debug_tools.sanitizer.read_events import event_fields  # noqa: PLC0415

    report = read_sanitizer_report(path, path.name)
    entries: list[dict[str, Any]] = []
    errors: dict[str, int] = {}
    for record in report.records:
        if record.level not in ("ERROR", "WARNING"):
            continue  # the start and summary lines: what the errors already say
        if record.level == "ERROR":
            errors[record.kind] = errors.get(record.kind, 0) + 1
        fields = event_fields(record)
        fields.pop("timestamp")
        entries.append(
            {
                **fields,
                "key": f"{record.source}:{record.line}",
                "logger": SANITIZER_LOGGER,
                "message": f"msSanitizer {record.kind}: {fields['message']}",
                "tool": "sanitizer",
                "what": record.kind,
            }
        )
    return OutputDigest("sanitizer", entries, {"errors": errors}, report.problems)


def digest_msaicerr(path: Path) -> OutputDigest:
    from npuwatch.debug_tools.sanitizer.read_msaicerr import read_msaicerr_output  # noqa: PLC0415
    from npuwatch.debug_tools.sanitizer.summary import summarise_sanitizer  # noqa: PLC0415

    summary = summarise_sanitizer([], [read_msaicerr_output(path, path.name)], root=str(path))
    entries: list[dict[str, Any]] = []
    for error in summary.aicore_errors:
        device = int(error.device) if error.device and error.device.isdigit() else None
        entries.append(
            {
                "key": f"{error.source}",
                "logger": SANITIZER_LOGGER,
                "level": "ERROR",
                "message": f"msaicerr AI Core error {error.error_code or '(no code)'} in "
                f"{error.kernel or 'an unknown kernel'}"
                + (f" (node {error.node})" if error.node else "")
                + (f" on device {device}" if device is not None else "")
                + f": {error.conclusion}",
                "tool": "msaicerr",
                "what": "aicore_error",
                "device": device,
                "source": error.source,
                "kernel": error.kernel,
                "node": error.node,
                "core": error.core,
                "task": error.task,
                "error_code": error.error_code,
                "faulting_instruction": error.faulting_instruction,
                "single_op_result": error.single_op_result,
                "advice": error.advice,
            }
        )
    figures = {"errors": {"aicore_error": len(entries)}} if entries else {"errors": {}}
    return OutputDigest("msaicerr", entries, figures, summary.problems)
