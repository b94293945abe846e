"""The precision summary as people read it on a terminal: an overview of every compare result,
then each one's first failure, the layer where the error grows and its worst tensors; overflow
nodes, failing APIs, findings, and the problems met while reading."""

from __future__ import annotations

from collections.abc import Callable

from npuwatch.debug_tools.precision.operators import METRIC_LABELS, OperatorVerdict
from npuwatch.debug_tools.precision.summary import Comparison, PrecisionSummary
from npuwatch.terminal import Palette

_Add = Callable[[str], None]
_NAME = 52
_SOURCE = 44
_STACK_FRAMES = 4


def render_precision_summary(summary: PrecisionSummary, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    add(palette.bold(f"npuwatch precision summary of {summary.root}"))
    add(f"  {summary.files} file{'s' if summary.files != 1 else ''} read")
    add(f"  {_judging(summary)}")
    add("")
    if summary.comparisons:
        _overview(summary, palette, add)
        for comparison in summary.comparisons:
            _details(comparison, palette, add)
    _anomalies(summary, palette, add)
    _apis(summary, palette, add)
    if summary.findings:
        add(palette.bold(f"Findings ({len(summary.findings)})"))
        for finding in summary.findings:
            add("  " + palette.highlight(finding.kind.replace("_", " ") + ": ") + finding.message)
        add("")
    if summary.problems:
        add(palette.bold(f"Problems reading the files ({len(summary.problems)})"))
        out.extend(f"  {problem}" for problem in summary.problems)
        add("")
    count = len(summary.findings)
    if count:
        add(f"Result: accuracy not reached, {count} finding{'s' if count != 1 else ''}.")
    else:
        add("Result: accuracy reached, no findings.")
    return "\n".join(out)


def shorten(name: str, width: int) -> str:
    """`name` in at most `width` characters, cut in the middle (both ends tell names apart)."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head) :]


def where(operator: OperatorVerdict) -> str:
    """`layers.5 forward`, or `-` for an operator outside any layer."""
    if operator.layer is None:
        return "-"
    return f"{operator.layer} {operator.direction}" if operator.direction else operator.layer


def _judging(summary: PrecisionSummary) -> str:
    t = summary.thresholds
    limits = (
        f"Cosine ≥ {t.cosine:g}, One Thousandth Err Ratio ≥ {t.thousandth:g}, not both "
        f"MaxAbsErr > {t.atol:g} and MaxRelativeErr > {t.rtol:g}"
    )
    if t.rejudge:
        return f"every tensor re-judged: {limits}"
    return f"verdicts from the files; tensors without one: {limits}"


def _overview(summary: PrecisionSummary, palette: Palette, add: _Add) -> None:
    add(palette.bold(f"Compare results ({len(summary.comparisons)})"))
    add(
        f"  {'RANK':>4}  {'SOURCE':<{_SOURCE}} {'KIND':<12} {'OPS':>5} {'PASS':>5} {'WARN':>5} "
        f"{'FAIL':>5} {'N/M':>4}  ERROR GROWS FROM"
    )
    for c in summary.comparisons:
        counts = c.counts
        unmatched = counts["unmatched"] + counts["unjudged"]
        start = c.error_start
        grows = "-"
        if start is not None:
            grows = f"{start.layer} {start.direction or ''}".rstrip()
            grows += "" if start.persistent else " (transient)"
        line = (
            f"  {c.rank:>4}  {shorten(c.source, _SOURCE):<{_SOURCE}} {c.kind:<12} "
            f"{len(c.operators):>5} {counts['pass']:>5} {counts['warning']:>5} "
            f"{counts['error']:>5} {unmatched:>4}  {grows}"
        )
        add(palette.highlight(line) if c.failed else line)
    add("  (N/M: operators not matched to a bench tensor, or with nothing to judge them by)")
    add("")


def _details(c: Comparison, palette: Palette, add: _Add) -> None:
    add(palette.bold(f"rank {c.rank}  {c.source}") + f"  ({c.kind}, judged by {c.judged_by})")
    first = c.first_failure
    if first is None:
        add("  no operator fails")
    else:
        metric = METRIC_LABELS.get(c.error_metric or "", c.error_metric)
        error = f", {metric} {first.error:.4g}" if first.error is not None else ""
        layer = f" in {where(first)}" if first.layer else ""
        add(
            "  first failure: "
            + palette.highlight(f"#{first.index} {first.operator}")
            + f"{layer}{error}"
        )
        if first.first_bad_tensor and first.first_bad_tensor != first.operator:
            add(f"    tensor {first.first_bad_tensor}")
        if first.message:
            add(f"    message: {first.message}")
    start = c.error_start
    if start is not None:
        layer = f"{start.layer} {start.direction or ''}".rstrip()
        if start.persistent:
            add(
                f"  error grows from: {layer} (at {start.first_failing_operator}); "
                f"it and every later layer fail ({start.failing_spans_from_here} spans)"
            )
        else:
            add(f"  failures are transient: first in {layer}, later layers pass again")
    for listing in c.top:
        add(f"  {listing.title}:")
        for tensor in listing.tensors:
            verdict = tensor.verdict if tensor.verdict != "pass" else ""
            line = f"    {tensor.value:>12.6g}  {shorten(tensor.name, _NAME):<{_NAME}} {verdict}"
            add(line.rstrip())
    add("")


def _anomalies(summary: PrecisionSummary, palette: Palette, add: _Add) -> None:
    if not summary.anomalies:
        return
    add(palette.bold("Overflow check: the first INF/NaN node of each rank"))
    for anomaly in summary.anomalies:
        plural = "s" if anomaly.nodes != 1 else ""
        add(
            f"  rank {anomaly.rank}  "
            + palette.highlight(anomaly.op_name)
            + f"  ({anomaly.nodes} anomaly node{plural} in {anomaly.source})"
        )
        if anomaly.bad_outputs:
            add("    " + ", ".join(anomaly.bad_outputs))
        for frame in anomaly.stack[:_STACK_FRAMES]:
            add(f"    {frame}")
        if len(anomaly.stack) > _STACK_FRAMES:
            add(f"    … {len(anomaly.stack) - _STACK_FRAMES} more frames (see --json)")
    add("")


def _apis(summary: PrecisionSummary, palette: Palette, add: _Add) -> None:
    if not summary.apis_checked:
        return
    failed = len(summary.failed_apis)
    add(palette.bold(f"API accuracy checker: {failed} of {summary.apis_checked} APIs fail"))
    for api in summary.failed_apis:
        message = f"  {api.message}" if api.message else ""
        add(f"  {palette.highlight(api.api)}  {' and '.join(api.directions)}{message}")
        for detail in api.details:
            add(f"    {detail}")
    add("")
