"""msOpProf key figures against the baseline's: the bound, AI Core utilisation and the gate."""

from __future__ import annotations

from typing import Any

import pytest

from npuwatch.profiling.baseline.opprof_figures import (
    BOUND_CHANGED,
    LESS_UTILISED,
    MORE_UTILISED,
    UNCHANGED,
    compare_figures,
    csv_cells,
    figure_lines,
    verdict_line,
)
from npuwatch.profiling.baseline.rules import parse_figure_threshold
from npuwatch.terminal import Palette

PLAIN = Palette(enabled=False)


def figures(name: str = "matmul", **changed: Any) -> dict[str, Any]:
    """Key figures as baseline.json keeps them (opprof_snapshot), with `changed` applied."""
    return {
        "op_name": name,
        "duration_us": 48.64,
        "bound": "cube",
        "bound_label": "compute-bound (cube)",
        "core_utilisation_pct": 82.3,
        "core_utilisation_pipe": "cube",
        "copy_share_pct": 45.338,
        "bandwidth_usage_pct": 60.917,
        "bandwidth_channel": "GM_to_L1",
        "main_memory_gb_s": 266.3,
        "l2_hit_rate_pct": 88.626,
    } | changed


MEMORY_BOUND: dict[str, Any] = {"bound": "mte2", "bound_label": "memory-bound (MTE2)"}


def test_the_same_figures_are_unchanged_with_every_delta_zero() -> None:
    comparison = compare_figures([figures()], [figures()], 10.0)
    assert comparison is not None and not comparison.regressed
    (change,) = comparison.changes
    assert change.status == UNCHANGED and not change.gates and change.findings == ()
    assert change.delta_core_utilisation_pp == 0.0
    assert change.delta_bandwidth_usage_pp == 0.0 and change.delta_copy_share_pp == 0.0


def test_a_change_of_bound_is_a_finding_that_names_both_bounds() -> None:
    comparison = compare_figures([figures()], [figures(**MEMORY_BOUND)], 10.0)
    assert comparison is not None and comparison.regressed
    (change,) = comparison.changes
    assert change.status == BOUND_CHANGED and change.bound_changed and change.gates
    assert change.findings == ("compute-bound (cube) → memory-bound (MTE2)",)


def test_a_kernel_that_became_compute_bound_is_reported_but_passes() -> None:
    comparison = compare_figures([figures(**MEMORY_BOUND)], [figures()], 10.0)
    assert comparison is not None and not comparison.regressed
    (change,) = comparison.changes
    assert change.status == BOUND_CHANGED and change.bound_changed and not change.gates
    assert (change.baseline_bound, change.current_bound) == (
        "memory-bound (MTE2)",
        "compute-bound (cube)",
    )


def test_a_utilisation_drop_beyond_the_threshold_fails_and_one_within_does_not() -> None:
    dropped = compare_figures([figures()], [figures(core_utilisation_pct=70.0)], 10.0)
    assert dropped is not None and dropped.regressed
    assert dropped.changes[0].status == LESS_UTILISED
    assert dropped.changes[0].delta_core_utilisation_pp == pytest.approx(-12.3)
    assert dropped.changes[0].findings == ("AI Core utilisation 82.3% → 70.0% (-12.3 points)",)
    within = compare_figures([figures()], [figures(core_utilisation_pct=73.0)], 10.0)
    assert within is not None and not within.regressed
    assert within.changes[0].status == UNCHANGED


def test_a_utilisation_rise_is_reported_and_never_fails() -> None:
    comparison = compare_figures(
        [figures(core_utilisation_pct=40.0)], [figures(core_utilisation_pct=82.3)], 10.0
    )
    assert comparison is not None and not comparison.regressed
    assert comparison.changes[0].status == MORE_UTILISED


def test_an_unknown_bound_on_one_side_is_no_change() -> None:
    unknown: dict[str, Any] = {"bound": None, "bound_label": "unknown (no PipeUtilization)"}
    comparison = compare_figures([figures(**unknown)], [figures()], 10.0)
    assert comparison is not None and not comparison.changes[0].bound_changed
    assert comparison.changes[0].baseline_bound == "unknown"


def test_turning_latency_bound_is_a_change_of_bound_shown_without_its_explanation() -> None:
    latency: dict[str, Any] = {
        "bound": None,
        "bound_label": "latency-bound (no pipe busy 30% of the time; busiest cube 12.0%)",
    }
    comparison = compare_figures([figures()], [figures(**latency)], 10.0)
    assert comparison is not None
    assert comparison.changes[0].findings[0] == "compute-bound (cube) → latency-bound"


def test_without_figures_on_either_side_there_is_nothing_to_compare() -> None:
    assert compare_figures([], [figures()], 10.0) is None
    assert compare_figures([figures()], (), 10.0) is None


def test_operators_only_one_side_has_are_left_to_the_operator_table() -> None:
    comparison = compare_figures([figures("a"), figures("b")], [figures("b"), figures("c")], 10.0)
    assert comparison is not None
    assert [change.op_name for change in comparison.changes] == ["b"]


def test_damaged_entries_of_an_edited_baseline_json_are_left_out_or_read_as_missing() -> None:
    damaged: list[Any] = ["matmul", {"op_name": 3}, figures(core_utilisation_pct="82%")]
    comparison = compare_figures(damaged, [figures()], 10.0)
    assert comparison is not None and not comparison.regressed
    (change,) = comparison.changes
    assert change.baseline_core_utilisation_pct is None and change.delta_core_utilisation_pp is None


def test_findings_come_first_and_the_report_names_them() -> None:
    comparison = compare_figures(
        [figures("steady"), figures("starved")],
        [figures("steady"), figures("starved", **MEMORY_BOUND, core_utilisation_pct=25.4)],
        10.0,
    )
    assert comparison is not None
    assert [change.op_name for change in comparison.changes] == ["starved", "steady"]
    assert comparison.counts() == {
        BOUND_CHANGED: 1, LESS_UTILISED: 0, MORE_UTILISED: 0, UNCHANGED: 1,
    }  # fmt: skip
    lines = figure_lines(comparison, PLAIN, top=None)
    assert lines[0].startswith("msOpProf key figures")
    assert lines[4].startswith("BOUND CHANGED") and lines[4].endswith(
        "starved: compute-bound (cube) → memory-bound (MTE2)"
    )
    assert "82.3 → 25.4   -56.9" in lines[4]
    assert verdict_line(comparison, PLAIN) == (
        "KEY FIGURES CHANGED: starved: compute-bound (cube) → memory-bound (MTE2), "
        "AI Core utilisation 82.3% → 25.4% (-56.9 points)"
    )
    assert csv_cells(comparison)["starved"]["figure_gates"] == "true"
    assert comparison.to_dict(top=1)["operators"][0]["op_name"] == "starved"
    assert len(comparison.to_dict(top=1)["operators"]) == 1


@pytest.mark.parametrize(("text", "points"), [("10", 10.0), ("5pp", 5.0), (" 0 ", 0.0)])
def test_the_figure_threshold_is_percentage_points(text: str, points: float) -> None:
    assert parse_figure_threshold(text) == points


@pytest.mark.parametrize("text", ["10%", "ten", "-1", "nan"])
def test_a_figure_threshold_that_is_no_points_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--figure-threshold"):
        parse_figure_threshold(text)
