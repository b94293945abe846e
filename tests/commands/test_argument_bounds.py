"""Every number a command takes has both ends: a value past any use (`-C 1e30`, `--top inf`) is a
usage error in one line and exit 2, never an OverflowError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.npuwatch_command import clean_environment, run_npuwatch

HUGE = str(10**30)

CASES = {
    "scan --context": ["scan", "--context", HUGE, "."],
    "grep -C": ["grep", "-C", HUGE, "x"],
    "grep --pid": ["grep", "--pid", str(2**64), "x"],
    "grep --device": ["grep", "--device", HUGE, "x"],
    "grep -m": ["grep", "-m", "-1", "x"],
    "profile summary --top": ["profile", "summary", "--top", HUGE, "."],
    "monitor summary --top": ["monitor", "summary", "--top", "inf", "."],
    "monitor summary --spike-window": ["monitor", "summary", "--spike-window", HUGE, "."],
    "monitor summary --spike-ratio": ["monitor", "summary", "--spike-ratio", "inf", "."],
    "precision summary --atol": ["precision", "summary", "--atol", "inf", "."],
    "precision summary --top": ["precision", "summary", "--top", "1" * 5000, "."],
    "sanitizer summary --top": ["sanitizer", "summary", "--top", HUGE, "."],
    "baseline compare --top": ["baseline", "compare", "--top", HUGE, "."],
    "es setup --replicas": ["es", "setup", "--replicas", HUGE],
}


@pytest.mark.parametrize("arguments", CASES.values(), ids=list(CASES))
def test_a_number_out_of_range_is_a_usage_error_naming_the_option_and_its_range(
    arguments: list[str], tmp_path: Path
) -> None:
    ran = run_npuwatch(*arguments, cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr
    last = ran.stderr.splitlines()[-1]
    option = arguments[arguments.index(next(a for a in arguments if a.startswith("-")))]
    assert f"error: argument {option}" in last or f"/{option}:" in last, last
    assert "expected" in last
    assert len(last) < 300  # five thousand digits are not repeated whole


def test_grep_since_a_time_before_the_year_1_is_one_line_and_exit_2(tmp_path: Path) -> None:
    ran = run_npuwatch(
        "grep",
        "--since",
        "0001-01-01",
        "--journal",
        str(tmp_path),
        "x",
        cwd=tmp_path,
        env=clean_environment(TZ="Asia/Shanghai"),
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines() == [
        "npuwatch: cannot read the time '0001-01-01': it is out of the years 1 to 9999"
    ]
