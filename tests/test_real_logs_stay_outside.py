"""The real excerpts in ../shared/real-logs are read from there, never copied into the project
(their sources' terms, and fixtures that test the parser, not a memory of the corpus)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.realdata


def test_no_line_of_the_real_logs_is_in_the_repository(real_logs: list[Path]) -> None:
    lines = {
        line
        for path in real_logs
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(line.strip("-= ")) > 60
    }
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    copied = []
    for name in tracked:
        path = REPO / name
        if path.suffix in {".so", ".png"} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        copied += [f"{name}: {line[:100]}" for line in lines if line in text]
    assert copied == []
