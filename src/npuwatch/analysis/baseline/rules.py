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


@dataclass(frozen=True)
class Rules:
    """When an operator, or the total, is a regression."""

    threshold_pct: float = parse_threshold(DEFAULT_THRESHOLD)
    """An average time per launch (or a total) more than this many percent above the
    baseline's is slower; more than this many percent below, faster."""
    min_time_us: float = DEFAULT_MIN_TIME_US
    by: str = BY_NAME
    """BY_NAME: each (op_name, op_type, task_type); BY_TYPE: each op_type, kernels added up."""
