"""Loading runs: one ProfileRun per rank or device, every frame present, problems instead of
exceptions, and the per-operator table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from npuwatch.profiling.msprof.operators import (
    OPERATOR_COLUMNS,
    combine_operator_tables,
    operator_table,
)
from npuwatch.profiling.msprof.run import NoProfileError, load_profile, load_profiles
from tests.conftest import FIXTURES

PROFILING = FIXTURES / "profiling"
TORCH = PROFILING / "torch_2rank"
RANK0 = TORCH / "worker0_31001_20250301080000123_ascend_pt"
MSPROF = PROFILING / "msprof" / "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA"
OLD = PROFILING / "msprof_old" / "PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR"
OP_SUMMARY_HEADER = "Device_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us)"


def test_a_torch_run_has_its_rank_versions_and_every_table() -> None:
    run = load_profile(RANK0)
    assert (run.layout, run.complete, run.rank, run.device_id) == ("torch_npu", True, 0, 0)
    assert (run.cann_version, run.torch_npu_version) == ("8.1.RC1", "2.5.1.post1")
    assert run.label == "rank 0"
    assert run.problems == []
    assert len(run.kernels) == 141 and run.kernels["step"].tolist()[:1] == [1]
    assert len(run.step_trace) == 3 and run.step_trace["step_us"].gt(0).all()
    assert len(run.communication) == 6 and set(run.communication["rank"]) == {0}
    assert not run.op_statistic.empty and not run.api_statistic.empty
    assert not run.operator_details.empty
    # npu_mem comes from the inner PROF_* folder, which ASCEND_PROFILER_OUTPUT lacks.
    assert not run.npu_mem.empty
    assert run.trace.empty  # timelines only when asked for
    assert run.files["kernels"] == (RANK0 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",)


def test_the_timeline_is_read_when_asked_for() -> None:
    run = load_profile(RANK0, with_trace=True)
    hardware = run.trace[run.trace["process_name"] == "Ascend Hardware"]
    assert len(hardware) == 8
    assert set(hardware["process_label"]) == {"NPU 0"}


def test_a_folder_of_ranks_gives_one_run_per_rank_in_order() -> None:
    runs = load_profiles(TORCH)
    assert [run.label for run in runs] == ["rank 0", "rank 1"]
    assert [run.device_id for run in runs] == [0, 1]


def test_the_progress_callback_counts_every_file_read() -> None:
    seen: list[tuple[int, int, int]] = []
    load_profiles(TORCH, progress=lambda done, total, size: seen.append((done, total, size)))
    assert seen[-1][0] == seen[-1][1] == len(seen)
    assert seen[-1][2] > 50_000


def test_an_msprof_run_and_an_old_export_read_the_same_way() -> None:
    current, old = load_profile(MSPROF), load_profile(OLD)
    assert (current.layout, current.device_id, current.rank) == ("msprof", 0, None)
    assert current.label == "device 0"
    assert len(current.kernels) == 63 and len(current.step_trace) == 3
    assert current.api_statistic["device_id"].isna().all()  # host rows
    assert len(old.kernels) == 15 and old.kernels["block_num"].eq(2).sum() == 12
    assert old.kernels["device_id"].eq(0).all()  # from the device_0 folder
    assert set(old.op_statistic["task_type"]) == {"AI_CORE", "AI_CPU"}
    assert old.problems == [] and current.problems == []


def test_load_profile_refuses_a_folder_with_no_run_or_several(tmp_path: Path) -> None:
    with pytest.raises(NoProfileError, match="holds no profiling run"):
        load_profile(tmp_path)
    with pytest.raises(NoProfileError, match="holds 2 runs"):
        load_profile(TORCH)
    assert load_profiles(tmp_path / "missing") == []


def test_a_torch_run_without_kernel_details_falls_back_to_its_inner_op_summary(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "w_9_1_ascend_pt"
    shutil.copytree(RANK0, run_dir)
    (run_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").unlink()
    inner = next(run_dir.glob("PROF_*")) / "mindstudio_profiler_output"
    (inner / "op_summary_20250301080009.csv").write_text(
        f"{OP_SUMMARY_HEADER}\n0,MatMul_1,MatMulV2,AI_CORE,10.5,100\n0,Add_2,Add,AI_VECTOR_CORE,11,5\n"
    )
    run = load_profile(run_dir)
    assert run.kernels["op_name"].tolist() == ["MatMul_1", "Add_2"]
    assert run.files["kernels"][0].name == "op_summary_20250301080009.csv"


def test_an_unfinished_torch_run_is_loaded_and_flagged(tmp_path: Path) -> None:
    run_dir = tmp_path / "w_9_1_ascend_pt"
    shutil.copytree(RANK0, run_dir)
    (run_dir / "ASCEND_PROFILER_OUTPUT" / "analyse.done").unlink()
    run = load_profile(run_dir)
    assert not run.complete
    assert len(run.kernels) == 141
    assert run.problems == [
        f"{run_dir}: no ASCEND_PROFILER_OUTPUT/analyse.done: torch_npu has not finished its "
        "analysis (or it failed); the data may be partial"
    ]


def test_malformed_rows_and_unreadable_files_are_problems_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "w_9_1_ascend_pt"
    shutil.copytree(RANK0, run_dir)
    kernels = run_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kernels.read_text().splitlines(keepends=True)
    lines[5] = "1,0,garbage\r\n"
    kernels.write_text("".join(lines))
    locked = run_dir / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    import npuwatch.profiling.msprof.run as run_module

    real_read = run_module.read_file

    def read_file(path: Path) -> bytes:
        if path == locked:
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(run_module, "read_file", read_file)
    run = load_profile(run_dir)
    assert len(run.kernels) == 140
    assert run.communication.empty
    assert run.problems == [
        f"{kernels}:6: 3 fields where the header has 25; row skipped",
        f"{locked}: cannot read (Permission denied)",
    ]


def test_a_run_with_kernels_of_two_devices_is_split_into_one_run_each(tmp_path: Path) -> None:
    prof = tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA"
    for device, duration in ((0, 100), (1, 130)):
        summary = prof / f"device_{device}" / "summary"
        summary.mkdir(parents=True)
        (summary / f"op_summary_{device}_1.csv").write_text(
            f"Op Name,OP Type,Task Type,Task Duration(us)\nMatMul_1,MatMulV2,AI_CORE,{duration}\n"
            + ("cut,short\n" if device else "")
        )
    (prof / "device_0" / "summary" / "api_statistic_0_1.csv").write_text(
        "Device_id,Level,API Name,Time(us),Count\nhost,acl,aclrtMemcpy,50,2\n"
    )
    whole = load_profile(prof)
    assert whole.device_id is None and len(whole.kernels) == 2
    runs = load_profiles(tmp_path)
    assert [run.label for run in runs] == ["device 0", "device 1"]
    assert [run.kernels["duration_us"].tolist() for run in runs] == [[100], [130]]
    # Host rows and problems stay with the first device, so that they are counted once.
    assert [len(run.api_statistic) for run in runs] == [1, 0]
    assert [len(run.problems) for run in runs] == [1, 0]
    assert (
        runs[0]
        .problems[0]
        .endswith("op_summary_1_1.csv:3: 2 fields where the header has 4; row skipped")
    )


def test_the_operator_table_has_its_documented_columns_and_arithmetic() -> None:
    run = load_profile(RANK0)
    table = operator_table(run)
    assert list(table.columns) == OPERATOR_COLUMNS
    assert table["total_us"].is_monotonic_decreasing
    assert table["count"].sum() == len(run.kernels)
    assert table["total_us"].sum() == pytest.approx(run.kernels["duration_us"].sum())
    assert (table["avg_us"] * table["count"]).round(6).tolist() == table["total_us"].round(
        6
    ).tolist()
    assert (table["min_us"] <= table["avg_us"]).all() and (table["avg_us"] <= table["max_us"]).all()
    matmul = table[table["op_type"] == "MatMulV2"].iloc[0]
    assert (matmul["op_name"], matmul["task_type"], matmul["count"]) == (
        "aclnnMatmul_MatMulCommon_MatMulV2",
        "AI_CORE",
        42,
    )
    assert str(table["count"].dtype) == "int64"


def test_rows_without_a_type_still_have_a_key_in_the_operator_table(tmp_path: Path) -> None:
    output = tmp_path / "w_1_1_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    (output / "kernel_details.csv").write_text("Name,Duration(us)\nA,1\nA,3\n")
    table = operator_table(load_profile(output))
    assert table[["op_name", "op_type", "task_type", "count", "total_us"]].values.tolist() == [
        ["A", "", "", 2, 4.0]
    ]


def test_a_run_with_nothing_has_an_empty_operator_table_with_the_columns(tmp_path: Path) -> None:
    (tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA").mkdir()
    run = load_profile(tmp_path)
    assert not run.has_data
    table = operator_table(run)
    assert table.empty and list(table.columns) == OPERATOR_COLUMNS


def test_operator_tables_of_ranks_combine_into_sums_and_extremes() -> None:
    tables = [operator_table(run) for run in load_profiles(TORCH)]
    combined = combine_operator_tables(tables)
    key = ["op_name", "op_type", "task_type"]
    both = pd.concat(tables).groupby(key)
    merged = combined.set_index(key)
    assert merged["count"].to_dict() == both["count"].sum().to_dict()
    assert merged["max_us"].to_dict() == both["max_us"].max().to_dict()
    assert merged["min_us"].to_dict() == both["min_us"].min().to_dict()
    assert list(combined.columns) == OPERATOR_COLUMNS
