"""What counts as a regression, and how a user writes it: the threshold rule.

No pandas here: `npuwatch baseline --help` shows these rules without loading it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BY_NAME, BY_TYPE = "name", "type"
DEFAULT_THRESHOLD = "10%"
DEFAULT_MIN_TIME_US = 100.0
"""Baseline total time (µs) below which a slower operator does not fail the gate."""
THRESHOLD_RULE = (
    "a percentage, with or without the sign: 10% and 10 both mean ten percent; a bare number "
    "between 0 and 1 (0.1) is refused as ambiguous: write 10% or 0.1%"
)
DEFAULT_FIGURE_THRESHOLD_PP = 10.0
"""How many percentage points of AI Core utilisation an msOpProf operator may lose."""
FIGURE_THRESHOLD_RULE = (
    "percentage points of AI Core utilisation, 10 or 10pp (82% -> 71% is a drop of 11 points); "
    "a percent sign is refused as ambiguous"
)


def parse_threshold(text: str) -> float:
    """The threshold in percent (THRESHOLD_RULE); ValueError that says what to write."""
    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise ValueError(f"--threshold {text!r}: give a percentage such as 10% or 10") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--threshold {text!r}: give a percentage of 0 or more, such as 10%")
    if not percent and 0 < value < 1:
        raise ValueError(
            f"--threshold {text} is ambiguous: write {value * 100:g}% for {value * 100:g} "
            f"percent, or {text}% for {text} percent"
        )
    return value


def parse_figure_threshold(text: str) -> float:
    """The utilisation drop in percentage points (FIGURE_THRESHOLD_RULE); ValueError else."""
    raw = text.strip().lower()
    if raw.endswith("%"):
        raise ValueError(
            f"--figure-threshold {text!r}: give percentage points, such as 10 "
            "(utilisation 82% -> 71% is a drop of 11 points), not a percentage"
        )
    try:
        value = float(raw.removesuffix("pp"))
    except ValueError:
        raise ValueError(
            f"--figure-threshold {text!r}: give percentage points, such as 10 or 10pp"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--figure-threshold {text!r}: give 0 or more percentage points")
    return value


@dataclass(frozen=True)
class Rules:
    """When an operator, or the total, is a regression."""

    threshold_pct: float = parse_threshold(DEFAULT_THRESHOLD)
    """An average time per launch (or a total) more than this many percent above the
    baseline's is slower; more than this many percent below, faster."""
    min_time_us: float = DEFAULT_MIN_TIME_US
    by: str = BY_NAME
    """BY_NAME: each (op_name, op_type, task_type); BY_TYPE: each op_type, kernels added up."""
    figure_threshold_pp: float = DEFAULT_FIGURE_THRESHOLD_PP
    """msOpProf: an operator whose AI Core utilisation fell by more than this many percentage
    points fails the gate, as does a change of its bound."""
