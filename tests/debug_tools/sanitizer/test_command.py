"""`npuwatch sanitizer summary`: golden text and JSON on the fixtures, exit codes (0 no errors,
1 errors, 2 a missing path or nothing recognisable, one line on stderr) and the help.

After an intended change of output, rewrite the golden files with NPUWATCH_UPDATE_GOLDEN=1 and
review the diff.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from npuwatch.cli import main
from tests.conftest import FIXTURES
from tests.golden_files import golden_text
from tests.npuwatch_command import clean_environment, run_npuwatch

DEBUG_TOOLS = FIXTURES / "debug_tools"
SANITIZER = DEBUG_TOOLS / "sanitizer"
GOLDEN = DEBUG_TOOLS / "golden"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, run from fixtures/debug_tools so that the paths it prints are
    the same on every machine."""
    return run_npuwatch(*args, cwd=DEBUG_TOOLS, env=clean_environment())


def golden(name: str, actual: str) -> str:
    return golden_text(GOLDEN / name, actual)


def test_the_text_summary_of_the_fixtures_is_the_golden_one() -> None:
    result = run("sanitizer", "summary", "sanitizer")
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    assert result.stdout == golden("sanitizer_summary.txt", result.stdout)


def test_the_json_summary_of_the_fixtures_is_the_golden_one() -> None:
    result = run("sanitizer", "summary", "sanitizer", "--json")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1
    assert (document["errors"], document["warnings"], len(document["aicore_errors"])) == (16, 5, 1)
    assert result.stdout == golden("sanitizer_summary.json", result.stdout)


def test_warnings_alone_exit_0_and_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sanitizer", "summary", str(SANITIZER / "synccheck.log")]) == 0
    out = capsys.readouterr().out
    assert "WARNING unpaired set_flag ×1 in add_custom_kernel" in out
    assert out.rstrip().endswith("Result: no errors (3 warnings listed above).")


def test_a_clean_tool_log_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sanitizer", "summary", str(SANITIZER / "mindstudio_sanitizer_log")]) == 0
    out = capsys.readouterr().out
    assert "msSanitizer found no error and no warning." in out
    assert out.rstrip().endswith("Result: no errors or warnings.")


def test_an_msaicerr_out_folder_alone_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sanitizer", "summary", str(SANITIZER / "msaicerr_out"), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [error["kernel"] for error in document["aicore_errors"]] == ["te_add_custom_kernel_0"]


def test_a_file_of_an_info_folder_reads_the_whole_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    info_txt = SANITIZER / "msaicerr_out/info_20260415111938/aicerror_0_20260415111938/info.txt"
    assert main(["sanitizer", "summary", str(info_txt)]) == 1
    assert "AI Core errors from msaicerr (1)" in capsys.readouterr().out


def test_top_limits_the_groups_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sanitizer", "summary", str(SANITIZER), "--top", "2"]) == 1
    out = capsys.readouterr().out
    assert "msSanitizer findings by kind and kernel (top 2 of 16)" in out
    assert "illegal write ×4" in out and "RAW hazard" not in out


def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run("sanitizer", "summary", str(tmp_path / "nothing"))
    assert result.returncode == 2
    assert result.stderr == (
        f"npuwatch: {tmp_path / 'nothing'} does not exist: give an msSanitizer report (the "
        "output of mssanitizer ... <app>), an msaicerr info_* or -out folder, or a folder "
        "holding them\n"
    )


def test_nothing_recognisable_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_text("[app] hello\n", encoding="utf-8")
    (tmp_path / "kernel.1234.o").write_bytes(b"\x7fELF\0\0====== ERROR: x")
    folder = run("sanitizer", "summary", str(tmp_path))
    assert folder.returncode == 2
    assert "no msSanitizer report and no msaicerr info_* folder" in folder.stderr
    assert "(2 files looked at)" in folder.stderr
    assert folder.stderr.count("\n") == 1
    single = run("sanitizer", "summary", str(tmp_path / "app.log"))
    assert single.returncode == 2
    assert "holds no msSanitizer record" in single.stderr


def test_the_help_teaches_paths_report_and_exit_status() -> None:
    for args in (("sanitizer", "--help"), ("sanitizer", "summary", "--help")):
        result = run(*args)
        assert result.returncode == 0
        for phrase in (
            "npuwatch sanitizer summary memcheck.log",
            "mindstudio_sanitizer_log/",
            "info_<timestamp>/",
            "exit status: 0 no errors",
            "1 at least one ERROR record or one AI Core error",
        ):
            assert phrase in result.stdout, (args, phrase)
