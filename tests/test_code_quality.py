"""The tool settings in pyproject.toml are enforced by the test suite itself, so that the one
test command of the README checks lint, formatting and types as CI does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

CHECKS = {
    "ruff lint": [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "src",
        "tests",
        "bench",
        "fixtures",
        "scripts",
    ],
    "ruff format": [
        sys.executable,
        "-m",
        "ruff",
        "format",
        "--check",
        "src",
        "tests",
        "bench",
        "fixtures",
        "scripts",
    ],
    "mypy": [sys.executable, "-m", "mypy"],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_code_passes(name: str) -> None:
    result = subprocess.run(
        CHECKS[name], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
