"""Finding runs and their files: which folders are runs, which file of each kind is read, and
when a run is complete."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from npuwatch.profiling.msprof.layout import (
    device_of_path,
    find_profile_runs,
    is_run_complete,
    run_files,
    run_root,
)
from tests.conftest import FIXTURES

PROFILING = FIXTURES / "profiling"
TORCH = PROFILING / "torch_2rank"
RANK0 = TORCH / "worker0_31001_20250301080000123_ascend_pt"
MSPROF = PROFILING / "msprof" / "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA"


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def test_every_run_of_the_fixtures_is_found_and_inner_prof_folders_are_not_runs() -> None:
    names = [run.name for run in find_profile_runs(PROFILING)]
    assert names == [
        "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA",
        "PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR",
        "worker0_31001_20250301080000123_ascend_pt",
        "worker1_31002_20250301080001123_ascend_pt",
    ]


def test_a_run_or_its_output_folder_stands_for_the_run() -> None:
    assert find_profile_runs(RANK0) == [RANK0]
    assert find_profile_runs(RANK0 / "ASCEND_PROFILER_OUTPUT") == [RANK0]
    assert run_root(MSPROF / "mindstudio_profiler_output") == MSPROF
    assert run_root(PROFILING) is None


def test_a_folder_without_runs_has_none(tmp_path: Path) -> None:
    touch(tmp_path, "logs/plog/plog-1.log", "notes.csv")
    assert find_profile_runs(tmp_path) == []


def test_mindstudio_output_wins_kind_by_kind_over_the_old_summary_folders(tmp_path: Path) -> None:
    prof = tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA"
    touch(
        prof,
        "mindstudio_profiler_output/op_summary_20250101000010.csv",
        "device_0/summary/op_summary_0_1.csv",
        "device_0/summary/op_statistic_0_1.csv",
        "device_1/summary/op_statistic_1_1.csv",
        "device_0/summary/hccl_statistic_0_1.csv",
    )
    files = run_files(prof).files
    assert [path.parent.name for path in files["kernels"]] == ["mindstudio_profiler_output"]
    assert [path.name for path in files["op_statistic"]] == [
        "op_statistic_0_1.csv",
        "op_statistic_1_1.csv",
    ]
    assert [path.name for path in files["communication_statistic"]] == ["hccl_statistic_0_1.csv"]
    assert run_files(prof).devices == (0, 1)


def test_the_newest_export_is_read_with_all_its_slices_in_order(tmp_path: Path) -> None:
    output = (
        tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA" / "mindstudio_profiler_output"
    )
    touch(
        output,
        "op_summary_20250101000010.csv",
        "op_summary_20250101000020_slice_1.csv",
        "op_summary_20250101000020_slice_0.csv",
        "op_summary_20250101000020_slice_10.csv",
        "npu_module_mem_20250101000020.csv",
        "msprof_20250101000020.json",
        "README.txt",
    )
    files = run_files(output.parent).files
    assert [path.name for path in files["kernels"]] == [
        "op_summary_20250101000020_slice_0.csv",
        "op_summary_20250101000020_slice_1.csv",
        "op_summary_20250101000020_slice_10.csv",
    ]
    assert "npu_mem" not in files  # npu_module_mem is another kind
    assert [path.name for path in files["trace"]] == ["msprof_20250101000020.json"]


def test_summaries_exported_as_json_are_named_as_not_read(tmp_path: Path) -> None:
    prof = tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA"
    touch(
        prof,
        "mindstudio_profiler_output/op_summary_20250101000010.json",
        "mindstudio_profiler_output/step_trace_20250101000010.json",
    )
    layout = run_files(prof)
    assert [path.name for path in layout.unsupported] == ["op_summary_20250101000010.json"]
    assert "kernels" not in layout.files


def test_a_torch_run_is_complete_with_analyse_done_and_not_before(tmp_path: Path) -> None:
    run = tmp_path / "w_1_2_ascend_pt"
    touch(run, "ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    assert not is_run_complete(run)
    touch(run, "ASCEND_PROFILER_OUTPUT/analyse.done")
    assert is_run_complete(run)
    assert is_run_complete(run / "ASCEND_PROFILER_OUTPUT")


def test_an_msprof_run_is_complete_once_an_op_summary_is_exported(tmp_path: Path) -> None:
    prof = tmp_path / "PROF_000001_20250101000000000_AAAAAAAAAAAAAAAA"
    touch(prof, "device_0/data/ts_track.data.0.slice_0")
    assert find_profile_runs(tmp_path) == [prof]
    assert not is_run_complete(prof)
    touch(prof, "mindstudio_profiler_output/op_summary_20250101000010.csv")
    assert is_run_complete(prof)
    assert is_run_complete(MSPROF)


def test_the_device_of_an_old_summary_comes_from_its_folder() -> None:
    assert device_of_path(Path("PROF_1/device_3/summary/op_summary_3_1.csv")) == 3
    assert device_of_path(Path("PROF_1/mindstudio_profiler_output/op_summary_1.csv")) is None


def test_finding_runs_does_not_import_pandas() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from npuwatch.profiling.msprof.layout import find_profile_runs, is_run_complete\n"
        f"runs = find_profile_runs(Path({str(PROFILING)!r}))\n"
        "assert len(runs) == 4 and all(is_run_complete(run) for run in runs)\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
