"""`npuwatch precision summary`: golden text and JSON, exit codes (0 accuracy reached, 1 not,
2 missing path or nothing recognisable), --plot, and help that teaches.

After an intended change of output, rewrite the golden files with NPUWATCH_UPDATE_GOLDEN=1 and
review the diff.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO
from tests.golden_files import golden_text
from tests.npuwatch_command import clean_environment, run_npuwatch

PRECISION = "fixtures/debug_tools/precision"
GOLDEN = FIXTURES / "debug_tools" / "golden"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # From the repository, with a relative path: the report names files as the user gave them.
    return run_npuwatch(*args, cwd=REPO)


def _golden(name: str, actual: str) -> str:
    return golden_text(GOLDEN / name, actual)


def test_the_text_report_of_every_fixture_matches_its_golden_file() -> None:
    result = run("precision", "summary", PRECISION)
    assert result.returncode == 1, result.stderr
    assert result.stdout == _golden("precision_summary.txt", result.stdout)
    assert result.stderr == ""


def test_the_json_document_of_every_fixture_matches_its_golden_file() -> None:
    result = run("precision", "summary", PRECISION, "--json", "--top", "3")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    expected = json.loads(_golden("precision_summary.json", result.stdout))
    assert document == expected
    assert document["schema_version"] == 1 and document["top"] == 3
    assert len(document["comparisons"]) == 16 and len(document["problems"]) == 2


def test_the_report_says_where_the_error_grows_for_each_rank() -> None:
    result = run("precision", "summary", f"{PRECISION}/compare_4rank")
    assert result.returncode == 1
    assert result.stdout.count("error grows from: layers.5 forward") == 4
    assert "first failure: #22 Tensor.add.2.forward in layers.2 forward" in result.stdout
    assert result.stdout.rstrip().endswith("Result: accuracy not reached, 4 findings.")


def test_a_passing_check_exits_0() -> None:
    result = run("precision", "summary", f"{PRECISION}/md5/compare_result_20250302103000.csv")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("Result: accuracy reached, no findings.")


def test_an_overflow_node_alone_exits_1() -> None:
    result = run("precision", "summary", f"{PRECISION}/overflow")
    assert result.returncode == 1
    assert "rank 3  Torch.matmul.12.forward  (2 anomaly nodes" in result.stdout


def test_a_missing_path_exits_2_with_one_line() -> None:
    result = run("precision", "summary", "no/such/folder")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "does not exist" in result.stderr


def test_a_folder_without_precision_files_exits_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n", encoding="utf-8")
    result = run_npuwatch("precision", "summary", str(tmp_path), env=clean_environment())
    assert result.returncode == 2
    assert "no precision result in" in result.stderr and "compare_result_*" in result.stderr


def test_only_damaged_files_exit_2_naming_the_first_problem() -> None:
    result = run(
        "precision", "summary", f"{PRECISION}/damaged/anomaly_analyze_1740913200000000000.json"
    )
    assert result.returncode == 2 and "not JSON" in result.stderr


def test_the_plot_is_a_real_png(tmp_path: Path) -> None:
    target = tmp_path / "precision.png"
    result = run("precision", "summary", f"{PRECISION}/compare_4rank", "--plot", str(target))
    assert result.returncode == 1, result.stderr
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 30_000


@pytest.mark.parametrize("args", [("precision", "--help"), ("precision", "summary", "--help")])
def test_help_teaches_examples_paths_report_and_exit_status(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.returncode == 0
    for words in ("examples:", "npuwatch precision summary ./compare_output", "PATH is one file",
                  "anomaly_analyze_*.json", "exit status: 0 accuracy reached"):  # fmt: skip
        assert words in result.stdout


def test_a_threshold_out_of_range_is_a_usage_error() -> None:
    result = run("precision", "summary", PRECISION, "--cosine", "1.5")
    assert result.returncode == 2 and "expected a value from 0 to 1" in result.stderr
