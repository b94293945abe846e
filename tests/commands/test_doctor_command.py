"""`npuwatch doctor`: exit codes 0 nothing wrong, 1 a warn or fail, 2 bad usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuwatch.cli import main
from tests.doctor.fake_host import npu_smi_environ
from tests.npu_smi_samples import FAKE_NPU_SMI


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ASCEND_* or NPUWATCH_* variable of the machine running the tests leaks into them,
    and ~ is an empty folder (so ~/ascend/log and ~/Ascend are this test's)."""
    for name in list(os.environ):
        if name.upper().startswith(("ASCEND_", "NPUWATCH_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NO_COLOR", "1")


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `npuwatch doctor` as a user would, on this machine."""
    return subprocess.run(
        [sys.executable, "-m", "npuwatch", "doctor", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env if env is not None else dict(os.environ),
    )


def test_on_this_machine_without_an_npu_doctor_says_what_is_absent_and_exits_0() -> None:
    result = doctor("--sample-seconds", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("npuwatch doctor: ")
    assert [line for line in lines if line in ("Environment", "Devices", "Logs")] == [
        "Environment",
        "Devices",
        "Logs",
    ]
    (npu_smi,) = [line for line in lines if line.split()[1:2] == ["npu-smi"]]
    assert npu_smi.split()[0] == "absent"
    assert npu_smi.endswith("not found — no Ascend driver on this host (npu-smi is not on PATH)")
    assert not [line for line in lines if line.split()[:1] in (["warn"], ["fail"])]
    assert lines[-1].endswith("nothing wrong found")


def test_json_on_this_machine_is_one_document_with_npu_smi_absent() -> None:
    result = doctor("--json", "--sample-seconds", "0")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["status"] == "ok"
    by_key = {check["key"]: check for check in document["checks"]}
    assert by_key["device.npu_smi"]["status"] == "absent"
    assert by_key["device.npu_smi"]["facts"]["command"] == ["npu-smi", "info"]


def test_debug_logging_makes_doctor_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "0")
    assert main(["doctor", "--sample-seconds", "0"]) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.split()[1:2] == ["ASCEND_GLOBAL_LOG_LEVEL"]]
    assert line.split()[0] == "warn"
    assert "→ export ASCEND_GLOBAL_LOG_LEVEL=3 (ERROR)" in out


def test_a_chip_in_warning_makes_doctor_exit_1_and_shows_the_chip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in npu_smi_environ(tmp_path, "3.2").items():
        monkeypatch.setenv(name, value)
    code = main(["doctor", "--npu-smi", f"{FAKE_NPU_SMI} info", "--sample-seconds", "0", "--json"])
    assert code == 1
    document = json.loads(capsys.readouterr().out)
    chip = next(c for c in document["checks"] if c["key"] == "device.chip.3.0")
    assert (chip["status"], chip["facts"]["health"]) == ("warn", "Warning")


def test_the_log_dir_option_is_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    (logs / "debug/plog").mkdir(parents=True)
    (logs / "debug/plog/plog-1_2025.log").write_text("x" * 2048)
    main(["doctor", "--log-dir", str(logs), "--sample-seconds", "0.1", "--json"])
    folder = next(
        c for c in json.loads(capsys.readouterr().out)["checks"] if c["key"] == "log.folder"
    )
    assert folder["facts"]["path"] == str(logs)
    assert folder["facts"]["bytes"] == 2048
    assert folder["facts"]["written_bytes"] == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--toolkit", "/no/such/toolkit"], "--toolkit /no/such/toolkit: no such folder"),
        (["--log-dir", "/no/such/log"], "--log-dir /no/such/log: no such folder"),
        (["--npu-smi", ""], "--npu-smi '': the npu-smi command is empty"),
        (["--sample-seconds", "-1"], "--sample-seconds -1: give 0 (skip) or a number"),
        (["--sample-seconds", "inf"], "--sample-seconds inf: give 0 (skip) or a number"),
        (["--sample-seconds", "1e12"], "--sample-seconds 1e+12: give 0 (skip) or a number"),
    ],
)
def test_bad_options_are_one_line_on_stderr_and_exit_2(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", *arguments]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"npuwatch: {message}")
    assert captured.err.count("\n") == 1


def test_help_teaches_with_examples_and_the_exit_codes() -> None:
    result = doctor("--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout
    assert "exit status: 0 nothing wrong" in result.stdout
    assert "--sample-seconds S" in result.stdout


def test_doctor_on_a_host_without_npu_smi_imports_neither_pydantic_nor_pandas(
    tmp_path: Path,
) -> None:
    code = (
        "import sys\n"
        "preloaded = set(sys.modules)\n"
        "from npuwatch.cli import main\n"
        "assert main(['doctor', '--sample-seconds', '0', '--npu-smi', 'no-such-npu-smi info']) == 0\n"
        "heavy = ('pydantic', 'pandas', 'npuwatch.parsers.stream', 'npuwatch.config')\n"
        "loaded = [m for m in heavy if m in sys.modules and m not in preloaded]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
