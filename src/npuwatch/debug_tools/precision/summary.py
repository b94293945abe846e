"""Where accuracy is lost: `npuwatch precision summary` over compare, overflow and acc_check files.

For each compare result (one per rank and file), the operators in execution order with their
verdict (`judge`), the first operator that fails, the layer where the error starts to
grow, and the top-N tensors by each metric. Besides: the first INF/NaN node of each rank
(overflow check) and the APIs that failed the API accuracy checker.

The operators' verdicts are in `operators`, the layer bisection ("where the error starts
to grow") in `bisect`, the top-N lists in `top`, the overflow and API accuracy checker
findings in `checks`; this module puts them together per compare result and makes the
findings.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from npuwatch.debug_tools.precision.bisect import ErrorStart, LayerSpan, error_start, layer_spans
from npuwatch.debug_tools.precision.checks import Anomaly, FailedApi, failed_apis, first_anomalies
from npuwatch.debug_tools.precision.files import PrecisionInputs
from npuwatch.debug_tools.precision.judge import Thresholds, judge
from npuwatch.debug_tools.precision.names import assign_layers, split_name
from npuwatch.debug_tools.precision.operators import (
    ERROR_METRICS,
    OperatorVerdict,
    operator_verdicts,
)
from npuwatch.debug_tools.precision.read.compare_rows import CompareTable
from npuwatch.debug_tools.precision.top import TopList, top_lists

SCHEMA_VERSION = 1
DEFAULT_TOP = 5


@dataclass(frozen=True)
class Comparison:
    """One compare result of one rank, judged."""

    label: str
    source: str
    kind: str
    rank: int
    judged_by: str
    """`file (Result)`, `thresholds`, `file and thresholds`, or `none`."""
    error_metric: str | None
    counts: dict[str, int]
    first_failure: OperatorVerdict | None
    error_start: ErrorStart | None
    top: list[TopList]
    layers: list[LayerSpan]
    operators: list[OperatorVerdict]

    @property
    def failed(self) -> int:
        return self.counts.get("error", 0)


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str


@dataclass(frozen=True)
class PrecisionSummary:
    """Everything `npuwatch precision summary` reports."""

    root: str
    top: int
    thresholds: Thresholds
    files: int
    comparisons: list[Comparison]
    anomalies: list[Anomaly]
    failed_apis: list[FailedApi]
    apis_checked: int
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `--json`: stable keys, floats to 6 significant digits."""
        document = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        return {key: _rounded(value) for key, value in document.items()}


def summarise_precision(
    inputs: PrecisionInputs, thresholds: Thresholds, *, top: int = DEFAULT_TOP
) -> PrecisionSummary:
    comparisons = [_comparison(table, thresholds, top) for table in inputs.compares if table.rows]
    anomalies = first_anomalies(inputs)
    failed, checked = failed_apis(inputs)
    findings = [
        Finding("accuracy_not_reached", _failure_message(comparison))
        for comparison in comparisons
        if comparison.failed
    ]
    findings += [
        Finding(
            "overflow",
            f"rank {a.rank}: first INF/NaN at {a.op_name} ({a.nodes} anomaly node"
            f"{'s' if a.nodes != 1 else ''}, {a.source})",
        )
        for a in anomalies
    ]
    findings += [
        Finding(
            "api_accuracy",
            f"{api.api} fails {' and '.join(api.directions)}"
            + (f": {api.message}" if api.message else ""),
        )
        for api in failed
    ]
    return PrecisionSummary(
        root=inputs.root,
        top=top,
        thresholds=thresholds,
        files=inputs.files,
        comparisons=comparisons,
        anomalies=anomalies,
        failed_apis=failed,
        apis_checked=checked,
        findings=findings,
        problems=inputs.problems,
    )


def _comparison(table: CompareTable, thresholds: Thresholds, top: int) -> Comparison:
    names = [split_name(row.name) for row in table.rows]
    layers = assign_layers(names)
    judged = [judge(row, table.kind, thresholds) for row in table.rows]
    operators = operator_verdicts(table.rows, names, layers, [verdict for verdict, _ in judged])
    counts = dict.fromkeys(("pass", "warning", "error", "unmatched", "unjudged"), 0)
    for operator in operators:
        counts[operator.verdict] += 1
    spans = layer_spans(operators)
    sources = {source for _, source in judged if source != "none"}
    if sources == {"file"}:
        judged_by = f"file ({table.verdict_column or 'Result'})"
    elif sources == {"thresholds"}:
        judged_by = "thresholds"
    else:
        judged_by = "file and thresholds" if sources else "none"
    metric = next((k for k in ERROR_METRICS if any(k in row.metrics for row in table.rows)), None)
    rank_label = f"rank {table.rank}"
    return Comparison(
        label=f"{rank_label} {table.source}",
        source=table.source,
        kind=table.kind,
        rank=table.rank,
        judged_by=judged_by,
        error_metric=metric,
        counts=counts,
        first_failure=next((op for op in operators if op.verdict == "error"), None),
        error_start=error_start(spans, operators),
        top=top_lists(table.rows, [verdict for verdict, _ in judged], top),
        layers=spans,
        operators=operators,
    )


def _failure_message(comparison: Comparison) -> str:
    first = comparison.first_failure
    assert first is not None  # only comparisons with a failure are findings
    where = f" in {first.layer} {first.direction or ''}".rstrip() if first.layer else ""
    message = (
        f"{comparison.label}: {comparison.failed} of {len(comparison.operators)} operators fail; "
        f"first {first.operator}{where}"
    )
    start = comparison.error_start
    if start is not None and start.persistent:
        direction = f" {start.direction}" if start.direction else ""
        message += f"; the error stays above tolerance from {start.layer}{direction} on"
    return message


def _rounded(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _rounded(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_rounded(inner) for inner in value]
    if isinstance(value, float):
        return float(f"{value:.6g}") if math.isfinite(value) else None
    return value
