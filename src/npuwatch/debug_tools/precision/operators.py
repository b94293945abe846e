"""The operators of one compare result, in execution order, each with its worst verdict.

A compare table lists tensors (`<operator>.<tensor>`); an operator is all its tensors, judged
by its worst (`judge`), with its largest headline error: MaxAbsErr, else |Max diff|,
else the relative difference of the statistics, else |L2norm diff| (ERROR_METRICS). The layer
bisection (`bisect`) and the report read these verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.debug_tools.precision.judge import worst
from npuwatch.debug_tools.precision.names import TensorName
from npuwatch.debug_tools.precision.read.compare_rows import CompareRow

ERROR_METRICS = ("max_abs_err", "max_diff", "max_rel_diff", "norm_diff")
"""The headline error of a tensor, the first of these it carries (|value|)."""
METRIC_LABELS = {
    "max_abs_err": "MaxAbsErr",
    "max_diff": "|Max diff|",
    "max_rel_diff": "MaxRelativeErr (statistics)",
    "norm_diff": "|L2norm diff|",
}
"""How the headline error metrics are named in the report (as the tools name them)."""


@dataclass(frozen=True)
class OperatorVerdict:
    """One operator (all its compared tensors) in execution order."""

    index: int
    """1 for the first operator compared."""
    operator: str
    layer: str | None
    direction: str | None
    verdict: str
    """`error`, `warning`, `pass`, `unmatched` or `unjudged`: its worst tensor's."""
    error: float | None
    """Its largest headline error (see ERROR_METRICS)."""
    first_bad_tensor: str | None = None
    message: str | None = None


def headline_error(row: CompareRow) -> float | None:
    """|value| of the first ERROR_METRICS the tensor carries; None when it carries none."""
    value = next((row.metrics[key] for key in ERROR_METRICS if key in row.metrics), None)
    return abs(value) if value is not None else None


def operator_verdicts(
    rows: list[CompareRow],
    names: list[TensorName],
    layers: list[str | None],
    verdicts: list[str],
) -> list[OperatorVerdict]:
    """The tensors grouped by operator, in the order each operator is first met."""
    grouped: dict[str, list[int]] = {}
    for position, name in enumerate(names):
        grouped.setdefault(name.operator, []).append(position)
    operators = []
    for index, (operator, positions) in enumerate(grouped.items(), start=1):
        verdict = worst([verdicts[p] for p in positions])
        errors = [e for p in positions if (e := headline_error(rows[p])) is not None]
        bad = next((p for p in positions if verdicts[p] == verdict), positions[0])
        operators.append(
            OperatorVerdict(
                index=index,
                operator=operator,
                layer=layers[positions[0]],
                direction=names[positions[0]].direction,
                verdict=verdict,
                error=max(errors) if errors else None,
                first_bad_tensor=rows[bad].name if verdict in {"error", "warning"} else None,
                message=rows[bad].message if verdict in {"error", "warning"} else None,
            )
        )
    return operators
