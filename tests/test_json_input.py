"""A tool's JSON output nested deeper than Python's parser can recurse is one malformed file,
said in a problem, never a RecursionError traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.npuwatch_command import run_npuwatch

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    ("command", "copy", "replaced"),
    [
        ("precision", None, "anomaly_analyze_1740909600000000000.json"),
        ("precision", None, "compare_result_1.json"),
        (
            "monitor",
            FIXTURES / "debug_tools" / "monitor" / "two_ranks",
            "anomaly_detected/anomaly_rank0.json",
        ),
        (
            "profile",
            FIXTURES / "profiling" / "torch_2rank" / "worker0_31001_20250301080000123_ascend_pt",
            "ASCEND_PROFILER_OUTPUT/communication.json",
        ),
    ],
)
def test_a_json_output_nested_too_deep_is_a_malformed_file(
    tmp_path: Path, command: str, copy: Path | None, replaced: str
) -> None:
    target = tmp_path / "output"
    if copy is not None:
        shutil.copytree(copy, target)
    else:
        target.mkdir()
    (target / replaced).write_text(DEEP, encoding="utf-8")
    done = run_npuwatch(command, "summary", str(target), timeout=120)
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    assert "nested too deep to be read" in done.stdout + done.stderr
