"""What the overflow check and the API accuracy checker add to a precision summary.

The overflow check's `anomaly_analyze_*.json` gives the first INF/NaN node of each rank; the
API accuracy checker's CSVs give the APIs that fail forward or backward (with their failing
outputs from the details file). Neither is a compare table, so neither goes through the
operators' verdicts or the layer bisection.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.debug_tools.precision.files import PrecisionInputs
from npuwatch.debug_tools.precision.names import split_name


@dataclass(frozen=True)
class Anomaly:
    """The first INF/NaN node of a rank."""

    rank: int
    source: str
    op_name: str
    nodes: int
    bad_outputs: list[str]
    stack: list[str]


@dataclass(frozen=True)
class FailedApi:
    """An API that failed the API accuracy checker."""

    api: str
    source: str
    directions: list[str]
    message: str | None
    details: list[str]


def first_anomalies(inputs: PrecisionInputs) -> list[Anomaly]:
    """The first INF/NaN node of each rank of each overflow file, by rank then file."""
    anomalies = []
    for overflow in inputs.overflows:
        for node in overflow.first_per_rank():
            count = sum(other.rank == node.rank for other in overflow.nodes)
            anomalies.append(
                Anomaly(
                    node.rank, overflow.source, node.op_name, count, node.bad_outputs, node.stack
                )
            )
    return sorted(anomalies, key=lambda anomaly: (anomaly.rank, anomaly.source))


def failed_apis(inputs: PrecisionInputs) -> tuple[list[FailedApi], int]:
    """The failing APIs and how many APIs were checked."""
    details = [detail for f in inputs.acc_checks for detail in f.details]
    failed, checked = [], 0
    for found in inputs.acc_checks:
        for result in found.results:
            checked += 1
            if not result.failed:
                continue
            directions = [
                direction
                for direction, outcome in (
                    ("forward", result.forward),
                    ("backward", result.backward),
                )
                if outcome == "error"
            ]
            notes = [
                f"{d.name}: {d.status}"
                + "".join(f", {k} {v:.6g}" for k, v in d.metrics.items())
                + (f" ({d.message})" if d.message else "")
                for d in details
                if d.name.startswith(result.api + ".") and d.status == "error"
            ]
            failed.append(FailedApi(result.api, found.source, directions, result.message, notes))
    if not checked:  # only details files: their failing outputs stand for their APIs
        for found in inputs.acc_checks:
            for detail in found.details:
                checked += 1
                if detail.status == "error":
                    direction = split_name(detail.name).direction or "?"
                    failed.append(
                        FailedApi(detail.name, found.source, [direction], detail.message, [])
                    )
    return failed, checked
