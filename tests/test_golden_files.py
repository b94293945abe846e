"""The golden-file rule itself: a rewrite is a skip to review, never a pass, and no rewrite
where CI is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CASE = """
from pathlib import Path
from tests.golden_files import golden_text

def test_it():
    path = Path({path!r})
    assert "new" == golden_text(path, "new")
"""


def run(tmp_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    golden = tmp_path / "case.txt"
    golden.write_text("old", "utf-8")
    test = tmp_path / "test_case.py"
    test.write_text(CASE.format(path=str(golden)), "utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NPUWATCH_UPDATE_GOLDEN")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(test)],
        cwd=REPO,
        env={**env, **environment, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_changed_output_fails_without_the_variable(tmp_path: Path) -> None:
    assert run(tmp_path).returncode == 1


def test_a_rewrite_is_skipped_for_review_not_passed(tmp_path: Path) -> None:
    done = run(tmp_path, NPUWATCH_UPDATE_GOLDEN="1")
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
    assert "rewrote case.txt" in done.stdout
    assert (tmp_path / "case.txt").read_text("utf-8") == "new"


def test_a_rewrite_is_refused_where_ci_is_set(tmp_path: Path) -> None:
    done = run(tmp_path, NPUWATCH_UPDATE_GOLDEN="1", CI="true")
    assert done.returncode == 1
    assert "refused when CI is set" in done.stdout
    assert (tmp_path / "case.txt").read_text("utf-8") == "old"
