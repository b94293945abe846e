"""msOpProf key figures of a run against its baseline's, operator by operator.

When both sides are msOpProf output, the baseline's `baseline.json` keeps each operator's key
figures of its longest launch (`snapshot.opprof_snapshot`, key `opprof_operators`), and the run
has the same. They are matched by op_name and compared:

- **the bound** (compute-bound (cube), memory-bound (MTE2), scalar-bound, latency-bound): a
  change is a finding, because the kernel now waits on something else whether or not its time
  moved yet (on another shape, or another chip, it will). An unknown bound (that side has no
  PipeUtilization) is no change.
- **AI Core utilisation** (the busier of cube and vector): a drop of more than
  `figure_threshold_pp` percentage points is a finding; a rise as large is `more utilised`.
- **bandwidth use** (the most used channel) and **copy share** (MTE time over core time):
  reported with their deltas, never judged, since they rise with a better kernel as well as a
  worse one.

A finding fails the gate (exit 1) like a slower operator. Deltas are percentage points. An
operator only one side has is left to the operator table (appeared, disappeared). Without
figures on both sides (a profile of a training run, a baseline stored before they were kept)
there is nothing to compare: `compare_figures` returns None and the report is as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from npuwatch.terminal import Palette

BOUND_CHANGED, LESS_UTILISED, MORE_UTILISED, UNCHANGED = (
    "bound changed", "less utilised", "more utilised", "unchanged",
)  # fmt: skip
STATUSES = (BOUND_CHANGED, LESS_UTILISED, MORE_UTILISED, UNCHANGED)
CSV_COLUMNS = [
    "figure_status", "figure_gates", "baseline_bound", "current_bound",
    "baseline_core_utilisation_pct", "current_core_utilisation_pct", "delta_core_utilisation_pp",
    "baseline_bandwidth_usage_pct", "current_bandwidth_usage_pct", "delta_bandwidth_usage_pp",
    "baseline_copy_share_pct", "current_copy_share_pct", "delta_copy_share_pp",
]  # fmt: skip
"""The columns `baseline compare --csv` appends to each operator row when figures compare."""
_DECIMALS = 3


@dataclass(frozen=True)
class FigureChange:
    """One operator's key figures before and after; percentages 0-100, deltas in points."""

    op_name: str
    status: str
    gates: bool
    findings: tuple[str, ...]
    """What fails the gate, in words: the change of bound, the drop of utilisation."""
    baseline_bound: str
    current_bound: str
    """`compute-bound (cube)`, `memory-bound (MTE2)`, `latency-bound`, `unknown` …"""
    bound_changed: bool
    baseline_core_utilisation_pct: float | None
    current_core_utilisation_pct: float | None
    delta_core_utilisation_pp: float | None
    baseline_core_utilisation_pipe: str | None
    current_core_utilisation_pipe: str | None
    baseline_bandwidth_usage_pct: float | None
    current_bandwidth_usage_pct: float | None
    delta_bandwidth_usage_pp: float | None
    baseline_bandwidth_channel: str | None
    current_bandwidth_channel: str | None
    baseline_copy_share_pct: float | None
    current_copy_share_pct: float | None
    delta_copy_share_pp: float | None
    baseline_duration_us: float | None
    current_duration_us: float | None
    """The longest launch, whose figures these are."""


@dataclass(frozen=True)
class FigureComparison:
    """Every operator both sides have figures of: findings first, then the biggest move."""

    changes: tuple[FigureChange, ...]
    threshold_pp: float

    @property
    def regressed(self) -> bool:
        return any(change.gates for change in self.changes)

    @property
    def findings(self) -> tuple[FigureChange, ...]:
        return tuple(change for change in self.changes if change.gates)

    def counts(self) -> dict[str, int]:
        return {s: sum(change.status == s for change in self.changes) for s in STATUSES}

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        return {
            "threshold_pp": self.threshold_pp,
            "regressed": self.regressed,
            "counts": self.counts(),
            "operators": [asdict(change) for change in _top(self.changes, top)],
        }


def compare_figures(
    baseline: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]], threshold_pp: float
) -> FigureComparison | None:
    """The figures of `current` against `baseline`; None when either side has none."""
    before, after = _by_name(baseline), _by_name(current)
    if not before or not after:
        return None
    changes = [
        _change(name, before[name], after[name], threshold_pp) for name in before if name in after
    ]
    changes.sort(
        key=lambda change: (
            not change.gates,
            -abs(change.delta_core_utilisation_pp or 0.0),
            change.op_name,
        )
    )
    return FigureComparison(tuple(changes), threshold_pp)


def _by_name(figures: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The figures by op_name; an entry without a name (an edited baseline.json) is left out."""
    named: dict[str, Mapping[str, Any]] = {}
    for item in figures:
        name = item.get("op_name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name and name not in named:
            named[name] = item
    return named


COMPUTE_PIPES = frozenset({"cube", "vector"})
"""The pipes whose bound is the one a kernel aims for."""


def _change(
    name: str, before: Mapping[str, Any], after: Mapping[str, Any], threshold_pp: float
) -> FigureChange:
    bound_before, bound_after = _bound_key(before), _bound_key(after)
    bound_changed = None not in (bound_before, bound_after) and bound_before != bound_after
    util_before = _number(before, "core_utilisation_pct")
    util_after = _number(after, "core_utilisation_pct")
    util_delta = _delta(util_before, util_after)
    dropped = util_delta is not None and util_delta < -threshold_pp
    findings = []
    # Only a kernel that stopped being bound by its compute pipe regressed: one that became
    # compute-bound (the aim of most kernel work) is reported, not failed.
    if bound_changed and bound_before in COMPUTE_PIPES and bound_after not in COMPUTE_PIPES:
        findings.append(f"{_bound_label(before)} → {_bound_label(after)}")
    if dropped:
        findings.append(
            f"AI Core utilisation {util_before:.1f}% → {util_after:.1f}% ({util_delta:+.1f} points)"
        )
    if bound_changed:
        status = BOUND_CHANGED
    elif dropped:
        status = LESS_UTILISED
    elif util_delta is not None and util_delta > threshold_pp:
        status = MORE_UTILISED
    else:
        status = UNCHANGED
    bandwidth = (_number(before, "bandwidth_usage_pct"), _number(after, "bandwidth_usage_pct"))
    copy = (_number(before, "copy_share_pct"), _number(after, "copy_share_pct"))
    return FigureChange(
        op_name=name,
        status=status,
        gates=bool(findings),
        findings=tuple(findings),
        baseline_bound=_bound_label(before),
        current_bound=_bound_label(after),
        bound_changed=bound_changed,
        baseline_core_utilisation_pct=util_before,
        current_core_utilisation_pct=util_after,
        delta_core_utilisation_pp=util_delta,
        baseline_core_utilisation_pipe=_text(before, "core_utilisation_pipe"),
        current_core_utilisation_pipe=_text(after, "core_utilisation_pipe"),
        baseline_bandwidth_usage_pct=bandwidth[0],
        current_bandwidth_usage_pct=bandwidth[1],
        delta_bandwidth_usage_pp=_delta(*bandwidth),
        baseline_bandwidth_channel=_text(before, "bandwidth_channel"),
        current_bandwidth_channel=_text(after, "bandwidth_channel"),
        baseline_copy_share_pct=copy[0],
        current_copy_share_pct=copy[1],
        delta_copy_share_pp=_delta(*copy),
        baseline_duration_us=_number(before, "duration_us"),
        current_duration_us=_number(after, "duration_us"),
    )


def _bound_key(figures: Mapping[str, Any]) -> str | None:
    """The bounding pipe, `latency` when no pipe bounds it, None when unknown."""
    bound = _text(figures, "bound")
    if bound:
        return bound
    return "latency" if (_text(figures, "bound_label") or "").startswith("latency") else None


def _bound_label(figures: Mapping[str, Any]) -> str:
    """`compute-bound (cube)`; `latency-bound` without its long explanation; `unknown`."""
    label = _text(figures, "bound_label") or _text(figures, "bound") or "unknown"
    return label if _text(figures, "bound") else label.split(" (", 1)[0]


def _number(figures: Mapping[str, Any], key: str) -> float | None:
    value = figures.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(figures: Mapping[str, Any], key: str) -> str | None:
    value = figures.get(key)
    return value if isinstance(value, str) else None


def _delta(before: float | None, after: float | None) -> float | None:
    if before is None or after is None:
        return None
    return round(after - before, _DECIMALS) + 0.0  # + 0.0: no -0.0 in the report


def _top(changes: Sequence[FigureChange], top: int | None) -> Sequence[FigureChange]:
    return changes if not top else changes[:top]


# --- the report's parts -------------------------------------------------------------------


def csv_cells(comparison: FigureComparison) -> dict[str, dict[str, Any]]:
    """The CSV_COLUMNS of each operator, by op_name."""
    return {
        change.op_name: {
            "figure_status": change.status,
            "figure_gates": "true" if change.gates else "false",
            **{
                column: getattr(change, column)
                for column in CSV_COLUMNS
                if column not in ("figure_status", "figure_gates")
            },
        }
        for change in comparison.changes
    }


def figure_lines(comparison: FigureComparison, palette: Palette, top: int | None) -> list[str]:
    """The text report's section "msOpProf key figures"."""
    shown = _top(comparison.changes, top)
    lines = [
        palette.bold("msOpProf key figures") + " (the longest launch of each operator; "
        "before → now, Δ in percentage points)",
        f"  rule      compute-bound no more, or AI Core utilisation down by more than "
        f"{comparison.threshold_pp:g} points, fails the gate",
        "",
        f"{'STATUS':<14} {'AI CORE %':>20} {'BANDWIDTH %':>20} {'COPY %':>20}  OPERATOR: BOUND",
    ]
    for change in shown:
        status = change.status.upper() if change.gates else change.status
        if change.gates:
            status = palette.level("ERROR", f"{status:<14}")
        bound = (
            f"{change.baseline_bound} → {change.current_bound}"
            if change.bound_changed
            else change.current_bound
        )
        cells = " ".join(
            _cell(getattr(change, f"baseline_{name}_pct"), getattr(change, f"current_{name}_pct"),
                  getattr(change, f"delta_{name}_pp"))
            for name in ("core_utilisation", "bandwidth_usage", "copy_share")
        )  # fmt: skip
        lines.append(f"{status:<14} {cells}  {change.op_name}: {bound}")
    hidden = len(comparison.changes) - len(shown)
    if hidden > 0:
        lines.append(palette.dim(f"... {hidden} more (--top 0 shows every operator)"))
    return lines


def verdict_line(comparison: FigureComparison, palette: Palette) -> str:
    """One line: the counts, or what failed the gate."""
    counts = comparison.counts()
    if not comparison.regressed:
        return "key figures: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    reasons = [f"{c.op_name}: {', '.join(c.findings)}" for c in comparison.findings]
    return palette.level("ERROR", "KEY FIGURES CHANGED: ") + "; ".join(reasons)


def _cell(before: float | None, after: float | None, delta: float | None) -> str:
    return f"{_pct(before):>5} → {_pct(after):<5} {'' if delta is None else f'{delta:+.1f}':>6}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
