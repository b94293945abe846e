"""The command line: output, exit codes (0 ok, 1 findings, 2 usage or input) and error lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuwatch.cli import main
from tests.conftest import GOLDEN, TREES
from tests.npuwatch_command import run_npuwatch


def run(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed `npuwatch` command as a user would."""
    text = stdin.decode() if stdin is not None else None
    return run_npuwatch(
        *args, stdin=text, cwd=cwd, env={**os.environ, "TZ": "UTC", "NO_COLOR": "1"}
    )


def test_parse_prints_one_json_object_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(GOLDEN / "multi-line.log"), "--timezone", "UTC"]) == 0
    lines = capsys.readouterr().out.splitlines()
    documents = [json.loads(line) for line in lines]
    assert len(documents) == 6
    assert documents[1]["ascend"]["lines"] == 6
    assert documents[0]["log"]["file"]["path"].endswith("multi-line.log")


def test_parse_table_has_a_header_and_one_line_per_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["parse", "--format", "table", str(GOLDEN / "console-blocks.log")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["TIME", "LEVEL", "MODULE"]
    assert any("EI0002" in line for line in lines[1:])


def test_parse_reads_standard_input() -> None:
    result = run("parse", "-", stdin=b"[ERROR] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:x\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["log"]["level"] == "ERROR"


def test_a_missing_file_is_one_clear_line_and_exit_2_but_other_files_are_still_parsed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["parse", "/no/such.log", str(GOLDEN / "prefixes.log")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == "npuwatch: cannot read /no/such.log: no such file (check the path)\n"
    assert len(captured.out.splitlines()) == 11


def test_a_folder_given_to_parse_points_at_scan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(GOLDEN)]) == 2
    assert "use 'npuwatch scan" in capsys.readouterr().err


def test_an_unreadable_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked.log"
    locked.write_text("x\n")
    locked.chmod(0)
    # CI runs as root, who may read anything: make the permission check answer as for a user.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: p != locked and real_access(p, mode))
    assert main(["parse", str(locked)]) == 2
    assert capsys.readouterr().err == (
        f"npuwatch: cannot read {locked}: permission denied (run as the user that owns the logs)\n"
    )


def test_an_unknown_timezone_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--timezone", "Mars/Base", str(GOLDEN / "prefixes.log")]) == 2
    assert "unknown time zone 'Mars/Base'" in capsys.readouterr().err


def test_bad_arguments_exit_2() -> None:
    assert run("parse").returncode == 2
    assert run("frobnicate").returncode == 2


def test_scan_exits_1_when_errors_are_found_and_0_on_a_clean_run() -> None:
    assert run("scan", str(TREES / "out-of-memory")).returncode == 1
    clean = run("scan", str(TREES / "clean-run"))
    assert clean.returncode == 0, clean.stderr
    assert "no error records" in clean.stdout


def test_scan_of_a_missing_tree_exits_2_with_advice(tmp_path: Path) -> None:
    result = run("scan", str(tmp_path / "nothing"))
    assert result.returncode == 2
    assert result.stderr.startswith("npuwatch: log tree")
    assert "ASCEND_PROCESS_LOG_PATH" in result.stderr


def test_scan_defaults_to_ascend_process_log_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(TREES / "clean-run"))
    assert main(["scan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["root"] == str(TREES / "clean-run")


def test_scan_json_is_one_document_with_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(TREES / "out-of-memory"), "--json", "--timezone", "UTC"]) == 1
    report = json.loads(capsys.readouterr().out)
    codes = {entry["code"]: entry for entry in report["error_codes"]}
    assert set(codes) == {"EL0004", "E30009"}
    assert codes["EL0004"]["processes"] == [{"host": None, "pid": 51220, "name": "python3.10"}]
    assert report["levels"]["ERROR"] == report["errors"]


def test_schema_prints_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "LogRecord"


def test_help_teaches_with_examples() -> None:
    result = run("scan", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout and "exit status" in result.stdout


def test_output_into_a_closed_pipe_is_not_an_error() -> None:
    command = (
        f"{sys.executable} -m npuwatch parse {GOLDEN / 'body-styles.log'} | head -n 1 >/dev/null"
    )
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
