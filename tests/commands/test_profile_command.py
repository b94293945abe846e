"""`npuwatch profile summary`: output, --json, --plot and exit codes (0 ok, 1 a slow rank,
2 usage or input error, one line on stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuwatch.cli import main
from tests.conftest import FIXTURES
from tests.npuwatch_command import run_npuwatch

PROFILING = FIXTURES / "profiling"
TORCH = PROFILING / "torch_2rank"
MSPROF = PROFILING / "msprof" / "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed `npuwatch` command as a user would."""
    return run_npuwatch(*args, env={**os.environ, "NO_COLOR": "1"})


def test_a_slow_rank_is_a_finding_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "summary", str(TORCH)]) == 1
    captured = capsys.readouterr()
    assert "slow rank: rank 1 is 7.8% slower per step than rank 0" in captured.out
    assert captured.out.rstrip().endswith("Result: 1 finding.")
    assert captured.err == ""


def test_a_single_run_summary_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "summary", str(MSPROF), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "Top 3 operators by total time" in out
    assert "Result: no findings." in out


def test_json_is_one_document_with_the_requested_top(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "summary", str(TORCH), "--json", "--top", "4"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == 1
    assert document["top"] == 4 and len(document["by_time"]) == 4
    assert [run["label"] for run in document["runs"]] == ["rank 0", "rank 1"]
    assert document["spread"]["slowest"] == "rank 1"
    assert document["by_time"][0]["total_us"] > document["by_time"][1]["total_us"]


def test_the_plot_is_a_real_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "job.png"
    assert main(["profile", "summary", str(TORCH), "--plot", str(target)]) == 1
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
    assert "slow rank" in capsys.readouterr().out


def test_exit_codes_through_the_installed_command(tmp_path: Path) -> None:
    slow = run("profile", "summary", str(TORCH), "--plot", str(tmp_path / "a.png"))
    assert slow.returncode == 1, slow.stderr
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_SIGNATURE)
    single = run("profile", "summary", str(MSPROF), "--json")
    assert single.returncode == 0, single.stderr
    assert json.loads(single.stdout)["findings"] == []
    missing = run("profile", "summary", str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1


def test_a_missing_folder_is_one_line_that_says_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "summary", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err == (
        f"npuwatch: profile folder {tmp_path / 'nothing'} does not exist: give an msprof PROF_* "
        "folder, a torch_npu *_ascend_pt folder, an msOpProf OPPROF_* folder, or the folder "
        "that holds the runs of several ranks\n"
    )


def test_a_file_instead_of_a_folder_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    kernels = TORCH / "worker0_31001_20250301080000123_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    assert main(["profile", "summary", str(kernels / "kernel_details.csv")]) == 2
    assert "is a file: give an msprof PROF_* folder" in capsys.readouterr().err


def test_a_folder_without_runs_says_what_was_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plog").mkdir()
    assert main(["profile", "summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"npuwatch: no profiling run in {tmp_path}: expected PROF_*")
    assert err.count("\n") == 1


def test_runs_with_nothing_parsed_yet_are_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w_1_1_ascend_pt" / "FRAMEWORK").mkdir(parents=True)
    assert main(["profile", "summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "1 run(s) in" in err and "nothing to summarise yet" in err and "analyse.done" in err


def test_plot_without_matplotlib_points_at_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.axes"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    monkeypatch.delitem(sys.modules, "npuwatch.profiling.plot", raising=False)
    assert main(["profile", "summary", str(TORCH), "--plot", str(tmp_path / "x.png")]) == 2
    captured = capsys.readouterr()
    assert captured.err == "npuwatch: --plot needs matplotlib: pip install 'npuwatch[plot]'\n"
    assert captured.out == ""
    assert not (tmp_path / "x.png").exists()


def test_a_plot_that_cannot_be_written_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "summary", str(MSPROF), "--plot", str(tmp_path / "no" / "x.png")]) == 2
    assert capsys.readouterr().err.startswith("npuwatch: cannot write the plot ")


@pytest.mark.parametrize("top", ["0", "-3", "many"])
def test_top_must_be_a_positive_number(top: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:  # argparse's own refusal
        main(["profile", "summary", str(MSPROF), "--top", top])
    assert exit_info.value.code == 2
    assert "argument --top" in capsys.readouterr().err


def test_help_teaches_with_examples_and_exit_status() -> None:
    result = run("profile", "summary", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout and "exit status" in result.stdout
    assert "npuwatch[plot]" in result.stdout


def test_help_and_argument_errors_do_not_import_pandas() -> None:
    code = (
        "import sys\n"
        "from npuwatch.cli import main\n"
        "try:\n"
        "    main(['profile', 'summary', '--help'])\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0\n"
        "assert 'pandas' not in sys.modules, 'pandas imported for --help'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
