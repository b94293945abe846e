"""Comparing a profile with a baseline: statuses, the gate, counts, totals and the threshold."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from npuwatch.profiling.baseline.compare import PER_RUN, PER_STEP, Comparison, compare
from npuwatch.profiling.baseline.rules import BY_TYPE, Rules, parse_threshold
from npuwatch.profiling.baseline.snapshot import Snapshot
from npuwatch.profiling.msprof.operators import OPERATOR_COLUMNS

Row = tuple[str, str, str, int, float]
"""op_name, op_type, task_type, count, total_us."""

MATMUL: Row = ("mm_MatMulV2", "MatMulV2", "AI_CORE", 10, 2000.0)
CONV: Row = ("conv1_Conv2D", "Conv2D", "AI_CORE", 10, 1000.0)
CONV2: Row = ("conv2_Conv2D", "Conv2D", "AI_CORE", 10, 3000.0)
CAST: Row = ("Cast66", "Cast", "AI_VECTOR_CORE", 10, 20.0)


def snapshot(*rows: Row, rank_steps: int | None = 10) -> Snapshot:
    table = pd.DataFrame(
        [(n, t, k, c, total, total / c, total / c, total / c) for n, t, k, c, total in rows],
        columns=OPERATOR_COLUMNS,
    )
    return Snapshot(table=table, source="x", ranks=1, rank_steps=rank_steps, step_us=None)


def slowed(row: Row, factor: float, count: int | None = None) -> Row:
    name, op_type, task_type, launches, total = row
    new_count = launches if count is None else count
    return (name, op_type, task_type, new_count, total / launches * factor * new_count)


def row_of(comparison: Comparison, op_name: str) -> dict[str, object]:
    rows = comparison.rows[comparison.rows["op_name"] == op_name]
    assert len(rows) == 1, rows
    record: dict[str, object] = rows.iloc[0].to_dict()
    return record


def test_an_operator_slower_per_launch_than_the_threshold_is_slower_and_gates() -> None:
    result = compare(snapshot(MATMUL, CONV), snapshot(slowed(MATMUL, 1.2), CONV), Rules())
    matmul = row_of(result, "mm_MatMulV2")
    assert matmul["status"] == "slower" and matmul["gates"]
    assert matmul["delta_avg_pct"] == pytest.approx(20.0)
    assert matmul["delta_total_us"] == pytest.approx(400.0)
    assert row_of(result, "conv1_Conv2D")["status"] == "unchanged"
    assert result.regressed


def test_a_change_within_the_threshold_is_unchanged() -> None:
    result = compare(snapshot(MATMUL), snapshot(slowed(MATMUL, 1.05)), Rules(threshold_pct=10))
    assert row_of(result, "mm_MatMulV2")["status"] == "unchanged"
    assert not result.regressed


def test_exactly_the_threshold_is_not_yet_slower() -> None:
    result = compare(snapshot(MATMUL), snapshot(slowed(MATMUL, 1.25)), Rules(threshold_pct=25))
    assert row_of(result, "mm_MatMulV2")["status"] == "unchanged"


def test_an_operator_faster_than_the_threshold_is_faster_and_passes() -> None:
    result = compare(snapshot(MATMUL), snapshot(slowed(MATMUL, 0.5)), Rules())
    assert row_of(result, "mm_MatMulV2")["status"] == "faster"
    assert not result.regressed


def test_a_slower_operator_with_little_baseline_time_does_not_gate() -> None:
    result = compare(
        snapshot(MATMUL, CAST), snapshot(MATMUL, slowed(CAST, 1.5)), Rules(min_time_us=100)
    )
    cast = row_of(result, "Cast66")
    assert cast["status"] == "slower" and not cast["gates"]
    assert not result.regressed


def test_appeared_and_disappeared_operators_are_reported_by_their_whole_time() -> None:
    result = compare(snapshot(MATMUL, CONV), snapshot(MATMUL, CONV2), Rules(threshold_pct=200))
    appeared, gone = row_of(result, "conv2_Conv2D"), row_of(result, "conv1_Conv2D")
    assert appeared["status"] == "appeared" and appeared["delta_total_us"] == 3000.0
    assert pd.isna(appeared["baseline_avg_us"]) and pd.isna(appeared["delta_avg_pct"])
    assert gone["status"] == "disappeared" and gone["delta_total_us"] == -1000.0
    assert not appeared["gates"] and not gone["gates"]
    assert result.counts() == {
        "slower": 0,
        "faster": 0,
        "unchanged": 1,
        "appeared": 1,
        "disappeared": 1,
    }
    # +2000 µs on 3000 is +67%, under this threshold: nothing gates.
    assert not result.regressed


def test_time_that_appears_gates_through_the_total() -> None:
    result = compare(snapshot(MATMUL, CONV), snapshot(MATMUL, CONV, CONV2), Rules())
    assert result.total.status == "slower" and result.total.gates
    assert result.total.delta_pct == pytest.approx(100.0)
    assert result.regressed


def test_rows_are_sorted_by_the_change_of_total_time() -> None:
    result = compare(
        snapshot(MATMUL, CONV, CAST),
        snapshot(slowed(MATMUL, 1.1), slowed(CONV, 0.5), CAST),
        Rules(),
    )
    assert list(result.rows["op_name"]) == ["conv1_Conv2D", "mm_MatMulV2", "Cast66"]


def test_more_launches_at_the_same_speed_are_reported_not_judged() -> None:
    result = compare(snapshot(MATMUL, CONV), snapshot(slowed(MATMUL, 1.0, count=20), CONV), Rules())
    matmul = row_of(result, "mm_MatMulV2")
    assert matmul["status"] == "unchanged" and matmul["launches_changed"]
    assert (matmul["baseline_count"], matmul["current_count"]) == (10, 20)
    assert not row_of(result, "conv1_Conv2D")["launches_changed"]


def test_a_longer_profile_has_the_same_launches_per_step_and_the_same_total_per_step() -> None:
    longer = snapshot(slowed(MATMUL, 1.0, count=30), slowed(CONV, 1.0, count=30), rank_steps=30)
    result = compare(snapshot(MATMUL, CONV), longer, Rules())
    assert not result.rows["launches_changed"].any()
    assert result.total.basis == PER_STEP
    assert result.total.baseline_us == pytest.approx(300.0)
    assert result.total.current_us == pytest.approx(300.0)
    assert result.total.status == "unchanged" and not result.regressed


def test_without_steps_the_total_is_of_the_whole_profile() -> None:
    result = compare(snapshot(MATMUL, rank_steps=None), snapshot(MATMUL), Rules())
    assert result.total.basis == PER_RUN
    assert result.total.baseline_us == result.total.current_us == 2000.0


def test_by_type_adds_up_the_kernels_of_each_type() -> None:
    result = compare(
        snapshot(MATMUL, CONV, CONV2),
        snapshot(MATMUL, slowed(CONV, 1.6), CONV2),
        Rules(by=BY_TYPE),
    )
    assert list(result.rows["op_type"]) == ["Conv2D", "MatMulV2"]
    conv = result.rows.iloc[0]
    assert conv["op_name"] == "" and conv["task_type"] == "AI_CORE"
    assert conv["baseline_count"] == 20 and conv["baseline_total_us"] == 4000.0
    # 600 µs more over 4000 µs at the same launches: +15% per launch.
    assert conv["delta_avg_pct"] == pytest.approx(15.0)
    assert conv["status"] == "slower"


def test_by_type_lists_every_core_a_type_ran_on() -> None:
    mixed = ("mm_mix", "MatMulV2", "MIX_AIC", 10, 100.0)
    result = compare(snapshot(MATMUL, mixed), snapshot(MATMUL, mixed), Rules(by=BY_TYPE))
    assert result.rows.iloc[0]["task_type"] == "AI_CORE,MIX_AIC"


@pytest.mark.parametrize(
    ("text", "percent"),
    [("10%", 10.0), ("10", 10.0), (" 7.5 % ", 7.5), ("0", 0.0), ("0.5%", 0.5), ("1", 1.0)],
)
def test_a_threshold_is_a_percentage_with_or_without_the_sign(text: str, percent: float) -> None:
    assert parse_threshold(text) == percent


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0.1", "ambiguous: write 10% for 10 percent, or 0.1% for 0.1 percent"),
        ("ten", "give a percentage such as 10%"),
        ("-5%", "0 or more"),
        ("nan", "0 or more"),
    ],
)
def test_a_threshold_that_could_be_misread_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_threshold(text)
