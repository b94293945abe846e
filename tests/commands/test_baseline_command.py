"""`npuwatch baseline add|list|compare` and `grep --baseline`, end to end on the profiling fixtures.

Exit codes: 0 nothing regressed (or stored, listed, found), 1 a regression (or grep found
nothing), 2 bad usage or input.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fixtures.profiling.make_profiles import write_torch_run

from npuwatch.cli import main
from npuwatch.profiling.baseline.compare import ROW_COLUMNS
from tests.conftest import FIXTURES

TORCH = FIXTURES / "profiling" / "torch_2rank"
MSPROF = FIXTURES / "profiling" / "msprof"
LLAMA = "2025-03-01_llama2-7b_pretrain"
RESNET = "2025-03-02_resnet50_infer"
MATMUL = "aclnnMatmul_MatMulCommon_MatMulV2"
TOLERANCE_PCT = 0.01
"""write_torch_run multiplies every MatMulV2 kernel by exactly the factor, with the same jitter
as the committed run; what separates the measured change from the factor is the rounding of
durations to the nanosecond (kernel_details.csv and the archive's CSV), under 1e-5 % on
kernels of 120-420 µs. A hundredth of a percentage point is ample and still catches 19.9 %."""


@pytest.fixture(autouse=True)
def no_default_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the archive of the machine running the tests."""
    monkeypatch.setenv("NPUWATCH_ARCHIVE", str(tmp_path / "default-archive"))


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "archive"
    assert add(folder, TORCH, "llama2-7b", "pretrain", "2025-03-01") == 0
    assert add(folder, MSPROF, "resnet50", "infer", "2025-03-02") == 0
    return folder


def profile(root: Path, slowdown: Mapping[str, float] | None = None) -> Path:
    """Both ranks of the fixture's training run, with `slowdown` applied, in `root`."""
    for rank in (0, 1):
        write_torch_run(root, rank=rank, slowdown=slowdown)
    return root


def npuwatch(*args: str | Path) -> int:
    try:
        return main([str(arg) for arg in args])
    except SystemExit as stop:
        return int(stop.code or 0)


def add(folder: Path, prof: Path, model: str, scenario: str, date: str, *more: str) -> int:
    return npuwatch(
        "baseline", "add", prof, "--model", model, "--scenario", scenario, "--date", date,
        "--archive", folder, *more,
    )  # fmt: skip


def compare_json(
    archive: Path, prof: Path, capsys: pytest.CaptureFixture[str], *more: str
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    status = npuwatch(
        "baseline", "compare", prof, "--against", LLAMA, "--archive", archive, "--json", *more
    )
    return status, json.loads(capsys.readouterr().out)


def rows_of(document: dict[str, Any], op_type: str) -> list[dict[str, Any]]:
    return [row for row in document["operators"] if row["op_type"] == op_type]


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.err.startswith("npuwatch: ")
    assert captured.err.count("\n") == 1 and captured.err.endswith("\n")
    return captured.err


# --- add and list ---------------------------------------------------------------------------


def test_added_baselines_are_listed_with_their_facts(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("baseline", "list", "--archive", archive) == 0
    header, llama, resnet = capsys.readouterr().out.splitlines()
    assert header.split() == ["NAME", "DATE", "MODEL", "SCENARIO", "OPS", "TOTAL", "ms", "CANN", "SOURCE"]  # fmt: skip
    assert llama.split() == [LLAMA, "2025-03-01", "llama2-7b", "pretrain", "20", "82.8", "8.1.RC1", str(TORCH)]  # fmt: skip
    assert resnet.split()[:5] == [RESNET, "2025-03-02", "resnet50", "infer", "20"]


def test_the_list_as_json_has_every_fact_of_a_baseline(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("baseline", "list", "--archive", archive, "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["archive"] == str(archive)
    llama = document["baselines"][0]
    assert llama["name"] == LLAMA and llama["ranks"] == 2 and llama["rank_steps"] == 6
    assert llama["cann_version"] == "8.1.RC1" and llama["torch_npu_version"] == "2.5.1.post1"
    assert llama["total_us"] == pytest.approx(82836.519, abs=0.001)
    assert llama["created_utc"].endswith("Z")


def test_the_archive_is_plain_csv_that_grep_finds_an_operator_in(archive: Path) -> None:
    result = subprocess.run(
        ["grep", "-r", "--include=op_summary.csv", "MatMulV3", str(archive)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    path, line = result.stdout.strip().split(":", 1)
    assert path == str(archive / "baselines" / LLAMA / "op_summary.csv")
    assert line.startswith("aclnnMatmul_MatMulV3Common_MatMulV3,MatMulV3,AI_CORE,36,")


def test_each_rank_is_kept_beside_the_whole(archive: Path) -> None:
    folder = archive / "baselines" / LLAMA
    assert sorted(p.name for p in (folder / "ranks").iterdir()) == ["rank-0.csv", "rank-1.csv"]
    metadata = json.loads((folder / "baseline.json").read_text())
    assert metadata["source"] == str(TORCH) and metadata["host"]
    assert metadata["npuwatch_version"]


def test_the_default_archive_is_the_environments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert npuwatch("baseline", "add", TORCH, "--model", "m", "--scenario", "s") == 0
    assert "default-archive" in capsys.readouterr().out
    assert len(list((tmp_path / "default-archive" / "baselines").iterdir())) == 1


def test_an_existing_baseline_is_not_overwritten_without_force(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert add(archive, MSPROF, "llama2-7b", "pretrain", "2025-03-01") == 2
    assert "add --force to replace it" in one_error_line(capsys)
    assert add(archive, MSPROF, "llama2-7b", "pretrain", "2025-03-01", "--force") == 0
    metadata = json.loads((archive / "baselines" / LLAMA / "baseline.json").read_text())
    assert metadata["source"] == str(MSPROF)


@pytest.mark.parametrize(
    ("prof", "model", "date", "says"),
    [
        (FIXTURES / "trees", "m", "2025-03-01", "no profiling run in"),
        (FIXTURES / "no-such-folder", "m", "2025-03-01", "does not exist"),
        (TORCH, "模型", "2025-03-01", "--model '模型' has no letter or digit"),
        (TORCH, "m", "01/03/2025", "give a date as YYYY-MM-DD"),
    ],
)
def test_add_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prof: Path, model: str, date: str, says: str
) -> None:
    assert add(tmp_path / "archive", prof, model, "s", date) == 2
    assert says in one_error_line(capsys)
    assert not (tmp_path / "archive" / "baselines").exists()


# --- compare --------------------------------------------------------------------------------


def test_compare_flags_an_injected_20_percent_regression(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"MatMulV2": 1.2})
    status, document = compare_json(archive, slower, capsys)
    assert status == 1 and document["regressed"]
    (matmul,) = rows_of(document, "MatMulV2")
    assert matmul["op_name"] == MATMUL and matmul["status"] == "slower" and matmul["gates"]
    assert matmul["delta_avg_pct"] == pytest.approx(20.0, abs=TOLERANCE_PCT)
    assert matmul["baseline_count"] == matmul["current_count"] == 84
    assert [row["op_type"] for row in document["operators"] if row["status"] != "unchanged"] == [
        "MatMulV2"
    ]
    # MatMulV2 is about a quarter of the operator time: the total moves about 5 %.
    assert document["total"]["basis"] == "per_step"
    assert document["total"]["delta_pct"] == pytest.approx(5.26, abs=0.01)
    assert document["total"]["status"] == "unchanged"


def test_the_table_of_a_regression_puts_it_first_and_names_it(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"MatMulV2": 1.2})
    capsys.readouterr()
    assert npuwatch("baseline", "compare", slower, "--against", LLAMA, "--archive", archive) == 1
    lines = capsys.readouterr().out.splitlines()
    first = lines[lines.index(next(line for line in lines if line.startswith("STATUS"))) + 1]
    assert first.split()[:3] == ["SLOWER", "+4354.6", "+20.0%"]
    assert first.endswith(f"{MATMUL} (MatMulV2, AI_CORE)")
    assert lines[-1] == f"REGRESSION beyond 10%: {MATMUL} (MatMulV2, AI_CORE) +20.0%"


def test_compare_passes_an_unchanged_run(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = profile(tmp_path / "same")
    status, document = compare_json(archive, same, capsys)
    assert status == 0 and not document["regressed"]
    assert document["counts"]["slower"] == 0
    assert all(row["delta_avg_pct"] == 0.0 for row in document["operators"])
    assert document["total"]["delta_us"] == 0.0


def test_a_training_profile_has_no_msopprof_key_figures_to_compare(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = compare_json(archive, profile(tmp_path / "same"), capsys)
    assert status == 0 and document["opprof_figures"] is None
    assert document["rules"]["figure_threshold_pp"] == 10.0


@pytest.mark.parametrize(("threshold", "status"), [("10%", 0), ("10", 0), ("4%", 1), ("4", 1)])
def test_a_5_percent_slowdown_fails_only_a_threshold_under_5_percent(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], threshold: str, status: int
) -> None:
    slower = profile(tmp_path / "slower", {"MatMulV2": 1.05})
    result, document = compare_json(archive, slower, capsys, "--threshold", threshold)
    assert result == status
    (matmul,) = rows_of(document, "MatMulV2")
    assert matmul["delta_avg_pct"] == pytest.approx(5.0, abs=TOLERANCE_PCT)
    assert matmul["status"] == ("unchanged" if status == 0 else "slower")


def test_a_slower_operator_under_min_time_is_reported_but_does_not_gate(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"MatMulV2": 1.2})
    # MatMulV2 has 21.8 ms of baseline time.
    status, document = compare_json(archive, slower, capsys, "--min-time-us", "30000")
    assert status == 0
    (matmul,) = rows_of(document, "MatMulV2")
    assert matmul["status"] == "slower" and not matmul["gates"]


def test_a_slowdown_of_one_kernel_name_is_found_by_name_and_by_type(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"aclnnAdd_AddAiCore_Add": 1.5})
    status, by_name = compare_json(archive, slower, capsys)
    assert status == 1
    assert [row["op_type"] for row in by_name["operators"] if row["gates"]] == ["Add"]
    status, by_type = compare_json(archive, slower, capsys, "--by", "type")
    assert status == 1
    assert len(by_type["operators"]) == 15  # six hcom_allReduce_ kernels are one type
    (hccl,) = rows_of(by_type, "hcom_allReduce_")
    assert hccl["op_name"] == "" and hccl["baseline_count"] == 12
    (add_row,) = rows_of(by_type, "Add")
    assert add_row["status"] == "slower" and add_row["delta_avg_pct"] == pytest.approx(50.0)


def test_another_model_shows_its_operators_appeared_and_the_baselines_disappeared(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = compare_json(archive, MSPROF, capsys)
    counts = document["counts"]
    assert (counts["appeared"], counts["disappeared"]) == (19, 19)
    assert {row["status"] for row in rows_of(document, "Conv2D")} == {"appeared"}
    (gone,) = rows_of(document, "MatMulV3")
    assert gone["status"] == "disappeared" and gone["current_avg_us"] is None
    assert gone["delta_total_us"] == -gone["baseline_total_us"]
    # The shorter inference step is faster in total: what appeared gates through it only.
    assert document["total"]["status"] == "faster"
    # The one operator both have (the same MemcpyAsync name) is compared, and is slower.
    (copy,) = rows_of(document, "MemcpyAsync")
    assert copy["status"] == "slower" and copy["gates"] and status == 1


def test_csv_output_is_one_row_per_operator(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"MatMulV2": 1.2})
    capsys.readouterr()
    status = npuwatch(
        "baseline", "compare", slower, "--against", "2025-03-01", "--archive", archive, "--csv"
    )
    assert status == 1
    reader = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert reader.fieldnames == ROW_COLUMNS
    rows = list(reader)
    assert len(rows) == 20
    assert (rows[0]["op_name"], rows[0]["status"], rows[0]["gates"]) == (MATMUL, "slower", "true")
    assert float(rows[0]["delta_avg_pct"]) == pytest.approx(20.0, abs=TOLERANCE_PCT)


def test_top_shortens_the_output_but_the_gate_sees_everything(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slower = profile(tmp_path / "slower", {"Cast": 1.5})  # 79 µs: far down the list
    status, document = compare_json(archive, slower, capsys, "--top", "3", "--min-time-us", "0")
    assert status == 1 and len(document["operators"]) == 3
    assert document["counts"]["slower"] == 1


def test_latest_of_a_model_is_its_newest_baseline(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert add(archive, profile(tmp_path / "newer", {"MatMulV2": 1.2}), "llama2-7b", "pretrain", "2025-03-09") == 0  # fmt: skip
    capsys.readouterr()
    status = npuwatch(
        "baseline", "compare", TORCH, "--against", "latest", "--model", "llama2-7b",
        "--scenario", "pretrain", "--archive", archive, "--json",
    )  # fmt: skip
    document = json.loads(capsys.readouterr().out)
    assert document["baseline"]["name"] == "2025-03-09_llama2-7b_pretrain"
    (matmul,) = rows_of(document, "MatMulV2")
    assert matmul["status"] == "faster" and status == 0


def test_an_unknown_baseline_is_one_line_naming_the_available_ones(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("baseline", "compare", TORCH, "--against", "gpt", "--archive", archive) == 2
    line = one_error_line(capsys)
    assert f"no baseline 'gpt' in {archive / 'baselines'}; available: {LLAMA}, {RESNET}" in line
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--threshold", "0.1"], "--threshold 0.1 is ambiguous"),
        (["--threshold", "lots"], "give a percentage such as 10%"),
        (["--min-time-us", "-1"], "--min-time-us -1: give 0 or more"),
        (["--model", "llama2-7b"], "with --against latest only"),
    ],
)
def test_compare_refuses_bad_usage_in_one_line(
    archive: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    capsys.readouterr()
    command = ["baseline", "compare", TORCH, "--against", LLAMA, "--archive", archive, *args]
    assert npuwatch(*command) == 2
    assert says in one_error_line(capsys)


def test_a_folder_without_a_profile_is_an_input_error(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    trees = FIXTURES / "trees"
    assert npuwatch("baseline", "compare", trees, "--against", LLAMA, "--archive", archive) == 2
    assert "no profiling run in" in one_error_line(capsys)


def test_help_teaches_with_examples_including_a_ci_gate() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "npuwatch", "baseline", "compare", "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0
    text = result.stdout
    assert "examples:" in text and "exit status:" in text and "# CI:" in text
    assert "10% and 10 both mean ten percent" in text
    assert "llama-2-7b-bf16" in text  # the naming rule


# --- grep --baseline --------------------------------------------------------------------------


def test_grep_baseline_finds_an_operator_in_the_baseline_that_has_it(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("grep", "--baseline", "MatMulV3", "--archive", archive) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{LLAMA}: aclnnMatmul_MatMulV3Common_MatMulV3 MatMulV3 AI_CORE 36 19086.005 530.167"
    ]


def test_grep_baseline_ignores_case_when_asked_and_finds_every_baseline(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("grep", "--baseline", "-i", "matmulv2", "--archive", archive) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [LLAMA, RESNET]
    assert lines[1] == f"{RESNET}: fc_MatMulV2 MatMulV2 AI_CORE 3 144.964 48.321"
    assert npuwatch("grep", "--baseline", "matmulv2", "--archive", archive) == 1


def test_grep_baseline_json_has_the_baselines_date_model_and_scenario(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert npuwatch("grep", "--baseline", "--json", "^MatMulV2$", "--archive", archive) == 0
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(d["baseline"], d["date"], d["model"], d["scenario"]) for d in documents] == [
        (LLAMA, "2025-03-01", "llama2-7b", "pretrain"),
        (RESNET, "2025-03-02", "resnet50", "infer"),
    ]
    assert documents[0]["op_name"] == MATMUL and documents[0]["count"] == 84
    assert documents[0]["avg_us"] == 259.202


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--baseline", "--level", "ERROR", "x"], "--level searches the journal"),
        (["--archive", "/tmp", "x"], "--archive DIR goes with --baseline"),
        (["--baseline", "("], "PATTERN is not a regular expression"),
    ],
)
def test_grep_baseline_usage_errors_are_one_line(
    archive: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    capsys.readouterr()
    assert npuwatch("grep", *args) == 2
    assert says in one_error_line(capsys)


def test_grep_baseline_without_an_archive_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert npuwatch("grep", "--baseline", "x", "--archive", tmp_path / "empty") == 2
    assert "npuwatch baseline add" in one_error_line(capsys)


def test_grep_baseline_and_the_baseline_help_load_no_pandas(archive: Path) -> None:
    code = (
        "import sys\n"
        "from npuwatch.cli import _build_parser, main\n"
        "_build_parser('baseline')\n"
        f"assert main(['grep', '--baseline', 'MatMul', '--archive', {str(archive)!r}]) == 0\n"
        "assert 'pandas' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("MatMul") >= 3


@pytest.mark.parametrize("command", [["list"], ["compare", TORCH, "--against", "latest"]])
def test_an_archive_that_is_a_file_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str | Path]
) -> None:
    not_a_folder = tmp_path / "archive.csv"
    not_a_folder.write_text("op_name\n")
    assert npuwatch("baseline", *command, "--archive", not_a_folder) == 2
    assert f"--archive {not_a_folder}: not a folder" in one_error_line(capsys)
