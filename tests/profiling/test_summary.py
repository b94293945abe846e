"""The profile summary: where the time goes, copies, step times, the slow rank, and its JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from npuwatch.profiling.msprof.run import ProfileRun, load_profile, load_profiles
from npuwatch.profiling.steps import SLOW_RANK_RATIO
from npuwatch.profiling.summary import (
    COPIES_COUNTED,
    SCHEMA_VERSION,
    ProfileSummary,
    summarise_profiles,
)
from npuwatch.profiling.text import duration, render_profile_summary, shorten
from npuwatch.terminal import Palette
from tests.conftest import FIXTURES

PROFILING = FIXTURES / "profiling"
TORCH = PROFILING / "torch_2rank"
MSPROF = PROFILING / "msprof"
OLD = PROFILING / "msprof_old"


@pytest.fixture(scope="module")
def torch_summary() -> ProfileSummary:
    return summarise_profiles(load_profiles(TORCH), root=str(TORCH))


def with_step(run: ProfileRun, step_us: float) -> ProfileRun:
    """The run with every step (and its computing part) set to `step_us`."""
    steps = run.step_trace.copy()
    steps["step_us"] = step_us
    steps["computing_us"] = step_us - steps["communication_not_overlapped_us"] - steps["free_us"]
    return dataclasses.replace(run, step_trace=steps)


def test_the_top_operators_are_the_biggest_totals_of_all_ranks(
    torch_summary: ProfileSummary,
) -> None:
    top = torch_summary.by_time
    assert len(top) == 10
    assert [row.total_us for row in top] == sorted((row.total_us for row in top), reverse=True)
    assert top[0].op_name == "aclnnMatmul_MatMulCommon_MatMulV2"
    assert top[0].count == 84  # 42 launches on each of the two ranks
    assert top[0].share_pct == pytest.approx(100 * top[0].total_us / torch_summary.kernel_time_us)
    assert torch_summary.kernel_count == 282


def test_the_most_launched_operators_come_first_by_count(torch_summary: ProfileSummary) -> None:
    counts = [row.count for row in torch_summary.by_count]
    assert counts == sorted(counts, reverse=True)
    assert [row.op_type for row in torch_summary.by_count[:4]] == [
        "MatMulV2",
        "MatMulV3",
        "RmsNorm",
        "Add",
    ]


def test_op_types_and_cores_share_out_all_the_kernel_time(torch_summary: ProfileSummary) -> None:
    for shares in (torch_summary.op_types, torch_summary.core_types):
        assert sum(share.total_us for share in shares) == pytest.approx(
            torch_summary.kernel_time_us
        )
        assert sum(share.share_pct or 0 for share in shares) == pytest.approx(100)
    cores = {share.name: share for share in torch_summary.core_types}
    assert set(cores) == {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "HCCL", "AI_CPU", "MEMCPY_ASYNC"}
    assert cores["AI_CORE"].count == 120 and cores["AI_CPU"].count == 6
    assert torch_summary.core_types[0].name == "AI_CORE"


def test_copies_count_memcpy_tasks_as_device_time_and_memcpy_calls_as_host_time(
    torch_summary: ProfileSummary,
) -> None:
    copies = torch_summary.copies
    assert (copies.count, [task.name for task in copies.tasks]) == (
        12,
        ["MemcpyAsync (MEMCPY_ASYNC)"],
    )
    memcpy = next(share for share in torch_summary.core_types if share.name == "MEMCPY_ASYNC")
    assert copies.total_us == memcpy.total_us
    assert copies.share_pct == pytest.approx(memcpy.share_pct)
    assert {api.name: api.count for api in copies.host_apis} == {
        "aclrtMemcpy": 6,
        "aclrtMemcpyAsync": 12,
    }
    assert all(api.share_pct is None for api in copies.host_apis)
    assert copies.counted == COPIES_COUNTED


def test_each_rank_has_its_mean_step_and_parts(torch_summary: ProfileSummary) -> None:
    rank0, rank1 = torch_summary.steps
    assert (rank0.label, rank0.steps) == ("rank 0", 3)
    steps = load_profile(TORCH / "worker0_31001_20250301080000123_ascend_pt").step_trace
    assert rank0.step_us == pytest.approx(steps["step_us"].mean())
    assert rank0.computing_us == pytest.approx(steps["computing_us"].mean())
    parts = [rank1.computing_us, rank1.communication_not_overlapped_us, rank1.free_us]
    assert sum(part or 0 for part in parts) == pytest.approx(rank1.step_us)


def test_a_rank_about_8_percent_slower_is_named_with_what_makes_the_gap(
    torch_summary: ProfileSummary,
) -> None:
    spread = torch_summary.spread
    assert spread is not None
    assert (spread.fastest, spread.slowest) == ("rank 0", "rank 1")
    assert 7.0 < spread.spread_pct < 9.0
    [finding] = torch_summary.findings
    assert finding.kind == "slow_rank"
    assert finding.message.startswith(
        f"rank 1 is {spread.spread_pct:.1f}% slower per step than rank 0"
    )
    assert "most of the gap is computing" in finding.message


@pytest.mark.parametrize(("slower_by", "named"), [(0.04, False), (0.0499, False), (0.06, True)])
def test_the_slow_rank_is_named_only_above_five_percent(slower_by: float, named: bool) -> None:
    fast, slow = load_profiles(TORCH)
    runs = [with_step(fast, 10_000.0), with_step(slow, 10_000.0 * (1 + slower_by))]
    summary = summarise_profiles(runs, root="r")
    assert summary.spread is not None
    assert summary.spread.spread_pct == pytest.approx(100 * slower_by)
    assert bool(summary.findings) is named
    assert SLOW_RANK_RATIO == 0.05


def test_a_rank_that_waits_in_communication_is_told_the_late_rank_is_another_one() -> None:
    fast, slow = load_profiles(TORCH)
    steps = slow.step_trace.copy()
    steps["communication_not_overlapped_us"] += 3000
    steps["step_us"] += 3000
    fast_steps = fast.step_trace.copy()
    fast_steps["computing_us"] = steps["computing_us"].to_numpy()
    fast_steps["free_us"] = steps["free_us"].to_numpy()
    fast_steps["step_us"] = fast_steps[
        ["computing_us", "communication_not_overlapped_us", "free_us"]
    ].sum(axis=1)
    summary = summarise_profiles(
        [
            dataclasses.replace(fast, step_trace=fast_steps),
            dataclasses.replace(slow, step_trace=steps),
        ],
        root="r",
    )
    [finding] = summary.findings
    assert "most of the gap is communication not overlapped" in finding.message
    assert "probably another one" in finding.message


def test_one_msprof_run_has_no_spread_and_no_findings() -> None:
    summary = summarise_profiles(load_profiles(MSPROF), root=str(MSPROF))
    assert summary.spread is None and summary.findings == []
    [steps] = summary.steps
    assert steps.computing_us is None and steps.step_us > 0
    assert summary.copies.share_pct > 10  # the inference copies its inputs each iteration


def test_a_run_with_only_an_op_statistic_is_summarised_from_it(tmp_path: Path) -> None:
    summary_dir = (
        tmp_path / "PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR" / "device_0" / "summary"
    )
    summary_dir.mkdir(parents=True)
    source = OLD / "PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR" / "device_0" / "summary"
    (summary_dir / "op_statistic_0_1.csv").write_bytes(
        (source / "op_statistic_0_1.csv").read_bytes()
    )
    summary = summarise_profiles(load_profiles(tmp_path), root=str(tmp_path))
    assert summary.runs[0].operator_source == "op_statistic"
    assert [row.op_name for row in summary.by_time] == ["Conv2D", "ArgMaxV2", "TransData", "Cast"]
    assert {share.name for share in summary.core_types} == {"AI_CORE", "AI_CPU"}


def test_two_runs_with_the_same_label_are_told_apart_by_their_folder() -> None:
    runs = load_profiles(MSPROF) + load_profiles(OLD)
    summary = summarise_profiles(runs, root="both")
    assert [run.label for run in summary.runs] == [
        "device 0 (PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA)",
        "device 0 (PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR)",
    ]


def test_the_json_document_is_stable_plain_data_in_microseconds(
    torch_summary: ProfileSummary,
) -> None:
    document = json.loads(json.dumps(torch_summary.to_dict(), allow_nan=False))
    assert document["schema_version"] == SCHEMA_VERSION == 1
    assert list(document) == [
        "schema_version",
        "root",
        "top",
        "runs",
        "kernel_time_us",
        "kernel_count",
        "by_time",
        "by_count",
        "op_types",
        "core_types",
        "copies",
        "steps",
        "spread",
        "findings",
        "problems",
    ]
    assert list(document["by_time"][0]) == [
        "op_name",
        "op_type",
        "task_type",
        "count",
        "total_us",
        "avg_us",
        "min_us",
        "max_us",
        "share_pct",
    ]
    assert document["runs"][1]["torch_npu_version"] == "2.5.1.post1"
    assert document["findings"][0]["kind"] == "slow_rank"
    assert document["by_time"][0]["total_us"] == round(torch_summary.by_time[0].total_us, 3)


def test_a_missing_average_is_null_in_json_not_nan() -> None:
    run = load_profiles(OLD)[0]
    statistic = run.op_statistic.copy()
    statistic["count"] = pd.array([None] * len(statistic), dtype="Int64")
    empty = run.kernels.iloc[0:0]
    summary = summarise_profiles(
        [dataclasses.replace(run, kernels=empty, op_statistic=statistic)], root="r"
    )
    text = json.dumps(summary.to_dict(), allow_nan=False)
    assert json.loads(text)["by_time"][0]["avg_us"] is None


def test_parse_problems_of_every_run_are_in_the_summary(tmp_path: Path) -> None:
    output = tmp_path / "w_1_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    (output / "kernel_details.csv").write_text("Name,Duration(us)\nA,1\nB,slow\n")
    summary = summarise_profiles(load_profiles(tmp_path), root=str(tmp_path))
    assert summary.problems[0] == (
        f"{output / 'kernel_details.csv'}:3: Duration(us) is 'slow', not a number; row skipped"
    )
    assert summary.runs[0].problems == 2  # and the missing analyse.done


def test_the_text_report_reads_top_down_to_a_result_line(torch_summary: ProfileSummary) -> None:
    text = render_profile_summary(torch_summary, Palette(enabled=False))
    lines = text.splitlines()
    assert lines[0] == f"npuwatch profile summary of {TORCH}"
    order = [
        "Top 10 operators by total time",
        "Top 10 operators by count",
        "Operator types (top 10 of 15)",
        "Cores (task types)",
        "Host↔device copies",
        "Step time per rank (mean over its steps)",
        "Findings",
        "Result: 1 finding.",
    ]
    assert [line for line in lines if line in order] == order
    assert any(line.startswith("  slow rank: rank 1 is ") for line in lines)
    assert "\033[" not in text


def test_durations_and_names_are_written_to_fit() -> None:
    assert [duration(x) for x in (None, 185.504, 21772.97, 3_200_000.0)] == [
        "-",
        "185.5 µs",
        "21.77 ms",
        "3.20 s",
    ]
    name = "aclnnFlashAttentionScoreGrad_FlashAttentionScoreGrad_FlashAttentionScoreGrad"
    short = shorten(name, 44)
    assert len(short) == 44 and short.endswith("AttentionScoreGrad") and "…" in short
    assert shorten("Cast", 44) == "Cast"


def test_ranks_are_compared_within_one_layout_only() -> None:
    runs = load_profiles(PROFILING)
    assert [run.layout for run in runs] == ["msprof", "msprof", "torch_npu", "torch_npu"]
    summary = summarise_profiles(runs, root=str(PROFILING))
    assert len(summary.steps) == 3  # the old export has no step trace
    assert summary.spread is not None
    assert (summary.spread.fastest, summary.spread.slowest) == ("rank 0", "rank 1")
