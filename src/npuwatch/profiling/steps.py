"""Step time per rank, and the slow-rank check of `npuwatch profile summary`.

Each rank's step time is the mean over its steps of `step_us` (computing + communication not
overlapped + free for torch_npu, the iteration time for msprof). When the slowest rank's mean is
more than 5 % above the fastest one's ((max - min) / min, the threshold of msprof-analyze's
slow-rank analysis), that is a finding, with the part of the step that makes most of the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.run import ProfileRun

SLOW_RANK_RATIO = 0.05
"""(slowest - fastest) / fastest mean step time above which the slowest rank is named."""
_STEP_PARTS = ("computing_us", "communication_not_overlapped_us", "free_us")
"""The parts of a torch_npu step that add up to it (fields of RankSteps)."""
_PART_ADVICE = {
    "computing_us": "its device computes longer: check its frequency and temperature "
    "(npu-smi info) and whether it gets more work than the others",
    "communication_not_overlapped_us": "it waits longer in communication: the rank that is "
    "late is probably another one, or one of its links is slow",
    "free_us": "its device is idle longer: the host is late (data loading, CPU binding, "
    "Python overhead or synchronisation on that rank)",
}


@dataclass(frozen=True)
class RankSteps:
    """Mean step time of one rank and its parts (µs; None when the file has no such part)."""

    label: str
    steps: int
    step_us: float
    computing_us: float | None
    communication_not_overlapped_us: float | None
    overlapped_us: float | None
    free_us: float | None


@dataclass(frozen=True)
class StepSpread:
    """The fastest and slowest rank by mean step time, and (slowest - fastest) / fastest."""

    fastest: str
    slowest: str
    spread_pct: float


@dataclass(frozen=True)
class Finding:
    """Something worth acting on; `kind` is a stable key (`slow_rank`)."""

    kind: str
    message: str


def rank_steps(run: ProfileRun, label: str) -> RankSteps | None:
    """The mean step of one run, or None when it has no step times."""
    steps = run.step_trace
    if c.RANK_TYPE in steps.columns:  # a cluster file's stage rows are not a rank's steps
        steps = steps[steps[c.RANK_TYPE].isna() | (steps[c.RANK_TYPE] == "rank")]
    steps = steps[steps[c.STEP_US].notna()]
    if steps.empty:
        return None

    def mean(column: str) -> float | None:
        if column not in steps.columns or steps[column].isna().all():
            return None
        return float(steps[column].mean())

    return RankSteps(
        label=label,
        steps=len(steps),
        step_us=float(steps[c.STEP_US].mean()),
        computing_us=mean(c.COMPUTING_US),
        communication_not_overlapped_us=mean(c.COMMUNICATION_NOT_OVERLAPPED_US),
        overlapped_us=mean(c.OVERLAPPED_US),
        free_us=mean(c.FREE_US),
    )


def step_spread(steps: list[RankSteps]) -> StepSpread | None:
    """How far apart the ranks are (None for fewer than two ranks with steps)."""
    if len(steps) < 2:
        return None
    fastest = min(steps, key=lambda rank: rank.step_us)
    slowest = max(steps, key=lambda rank: rank.step_us)
    if fastest.step_us <= 0:
        return None
    spread = 100.0 * (slowest.step_us - fastest.step_us) / fastest.step_us
    return StepSpread(fastest.label, slowest.label, spread)


def slow_rank_findings(steps: list[RankSteps], spread: StepSpread | None) -> list[Finding]:
    """The slow-rank finding when the spread is above SLOW_RANK_RATIO, saying which part of the
    step (computing, communication not overlapped, free) makes most of the gap."""
    if spread is None or spread.spread_pct <= 100.0 * SLOW_RANK_RATIO:
        return []
    slow = next(rank for rank in steps if rank.label == spread.slowest)
    fast = next(rank for rank in steps if rank.label == spread.fastest)
    message = (
        f"{slow.label} is {spread.spread_pct:.1f}% slower per step than {fast.label} "
        f"({slow.step_us:.0f} µs against {fast.step_us:.0f} µs)"
    )
    gaps = {
        part: (getattr(slow, part) or 0.0) - (getattr(fast, part) or 0.0) for part in _STEP_PARTS
    }
    part = max(gaps, key=lambda name: gaps[name])
    if gaps[part] > 0 and any(getattr(slow, name) is not None for name in _STEP_PARTS):
        name = part.removesuffix("_us").replace("_", " ")
        message += f"; most of the gap is {name} (+{gaps[part]:.0f} µs): {_PART_ADVICE[part]}"
    return [Finding("slow_rank", message)]
