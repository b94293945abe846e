"""The benchmarks under bench/ are code too: each one still imports what it measures and
answers --help (they are run by hand, so nothing else would notice a rename)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPTS = sorted((REPO / "bench").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.name for script in SCRIPTS])
def test_the_benchmark_imports_and_answers_help(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout


def test_the_root_cause_benchmark_finds_each_planted_verdict() -> None:
    """bench/correlate_bench.py --quick: the execution, communicator-init and link-setup
    failures at 256 processes, each verdict checked against the planted one (the script says
    MISMATCH and exits 1 if not); its timings are printed, never asserted."""
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "correlate_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "MISMATCH" not in result.stdout
    for scenario in ("exec", "init", "link"):
        assert f"\n== {scenario}: " in result.stdout
    assert "× parsing alone per line" in result.stdout


def test_there_are_benchmarks_to_check() -> None:
    assert len(SCRIPTS) >= 9


def test_fluent_bit_parses_every_line_of_the_flood_it_is_compared_on() -> None:
    """bench/agent_bench.py compares the agent with Fluent Bit's tail + regex parser: a regex
    that missed the lines would leave Fluent Bit less work and flatter it."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from agent_bench import FLUENT_BIT_PARSER, debug_lines
    finally:
        sys.path.remove(str(REPO / "bench"))
    # Onigmo's (?<name>...) is Python's (?P<name>...); the rest of this pattern reads the same.
    header = re.compile(FLUENT_BIT_PARSER.replace("(?<", "(?P<"))
    lines = debug_lines(5000, 200000)
    fields = [header.match(line) for line in lines]
    assert all(fields)
    assert {match["module"] for match in fields if match} >= {"GE", "HCCL", "RUNTIME"}
    assert all(match["body"] for match in fields if match)
