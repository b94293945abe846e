"""A run's digest is worked out in a child process, so the agent never holds pandas."""

from __future__ import annotations

import subprocess
import sys

import pytest

from npuwatch.agent.child_reader import DigestFailed
from npuwatch.agent.profiling_digest import digest_runs, digests_in_child, main
from tests.conftest import FIXTURES, REPO

TORCH_RUNS = FIXTURES / "profiling" / "torch_2rank"


def test_the_child_gives_the_same_digest_as_reading_in_this_process() -> None:
    here = digest_runs(TORCH_RUNS)
    assert [run.label for run in here] == ["rank 0", "rank 1"]
    assert digests_in_child(TORCH_RUNS) == here
    assert all(run.operators and run.step_us and run.first_start_us for run in here)


def test_a_child_that_takes_too_long_is_a_failure_that_says_so() -> None:
    with pytest.raises(DigestFailed, match=r"longer than 0\.01 s"):
        digests_in_child(TORCH_RUNS, timeout_s=0.01)


def test_a_child_that_fails_reports_its_last_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A child that dies at once (a shell, not python, given the module): its stderr line.
    monkeypatch.setattr(sys, "executable", "/bin/sh")
    with pytest.raises(DigestFailed, match=r"^/bin/sh: 0: cannot open npuwatch"):
        digests_in_child(TORCH_RUNS)


def test_the_digest_command_prints_one_error_line_when_the_run_cannot_be_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreadable(folder: object) -> list[object]:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("npuwatch.agent.profiling_digest.digest_runs", unreadable)
    assert main([str(TORCH_RUNS)]) == 1
    assert capsys.readouterr().err == "OSError: [Errno 5] Input/output error\n"


def test_the_digest_command_needs_exactly_one_folder() -> None:
    assert main([]) == 2


def test_the_agent_process_never_imports_pandas_to_import_a_run() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from npuwatch.agent.profiling_digest import digests_in_child\n"
        f"runs = digests_in_child(Path({str(TORCH_RUNS)!r}))\n"
        "assert len(runs) == 2\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert result.returncode == 0, result.stderr
