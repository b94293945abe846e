"""Where the error starts to grow: a bisection over the layers of one compare result.

"Bisect by layer": operators are grouped into layers by their names (`names`: the
module path prefix, `layers.5`; APIs take the layer of the module before them), and consecutive
operators of one layer and one direction form a span (`layers.5` forward, later `layers.5`
backward). A span fails when any of its operators fails, and its worst error is the largest
headline error of its tensors (MaxAbsErr, else |Max diff|, else the relative difference of
the statistics). The error starts to grow at the first span from which every later span fails:
the boundary a bisection over layers finds when the error, once out of tolerance, stays out
(as it does when a wrong result propagates). When the last span passes again, the failures
were transient: the first failing span is given, marked not persistent.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.debug_tools.precision.operators import OperatorVerdict


@dataclass(frozen=True)
class LayerSpan:
    """Consecutive operators of one layer and direction."""

    layer: str
    direction: str | None
    first_index: int
    operators: int
    failed: int
    worst_error: float | None


@dataclass(frozen=True)
class ErrorStart:
    """The layer where the error starts to grow (see the module docstring)."""

    layer: str
    direction: str | None
    first_failing_operator: str
    persistent: bool
    """True when every later layer fails too."""
    failing_spans_from_here: int


def layer_spans(operators: list[OperatorVerdict]) -> list[LayerSpan]:
    """Runs of consecutive operators of one layer and direction; operators without a layer
    end a run and belong to none."""
    spans: list[LayerSpan] = []
    members: list[OperatorVerdict] = []
    for operator in [*operators, None]:
        same = (
            operator is not None
            and members
            and (operator.layer, operator.direction) == (members[0].layer, members[0].direction)
        )
        if members and not same:
            errors = [m.error for m in members if m.error is not None]
            layer = members[0].layer
            assert layer is not None  # only operators with a layer are gathered
            spans.append(
                LayerSpan(
                    layer=layer,
                    direction=members[0].direction,
                    first_index=members[0].index,
                    operators=len(members),
                    failed=sum(m.verdict == "error" for m in members),
                    worst_error=max(errors) if errors else None,
                )
            )
            members = []
        if operator is not None and operator.layer is not None:
            members.append(operator)
    return spans


def error_start(spans: list[LayerSpan], operators: list[OperatorVerdict]) -> ErrorStart | None:
    """The span from which every later judged span fails, else the first failing one (not
    persistent); None when no span fails. Spans of unjudged operators only are left out."""
    judged = [
        span
        for span in spans
        if any(
            op.verdict in {"pass", "warning", "error"}
            for op in operators[span.first_index - 1 : span.first_index - 1 + span.operators]
        )
    ]
    failing = [span.failed > 0 for span in judged]
    if not any(failing):
        return None
    persistent = failing[-1]
    if persistent:
        start = len(failing)
        while start > 0 and failing[start - 1]:
            start -= 1
    else:
        start = failing.index(True)
    span = judged[start]
    members = operators[span.first_index - 1 : span.first_index - 1 + span.operators]
    first = next(op.operator for op in members if op.verdict == "error")
    return ErrorStart(
        layer=span.layer,
        direction=span.direction,
        first_failing_operator=first,
        persistent=persistent,
        failing_spans_from_here=sum(failing[start:]),
    )
