"""The fixture scripts write the committed fixtures, byte for byte: a fixture edited by hand, or
a script changed without running it, fails here. Each script is run in a copy of fixtures/,
where it writes what it writes (next to itself), and the copy must equal the repository's."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

SCRIPTS = sorted(path.relative_to(FIXTURES) for path in FIXTURES.rglob("make_*.py"))


def differing(left: Path, right: Path) -> list[str]:
    """Files that differ, or are on one side only, below two folders (relative paths)."""
    found: list[str] = []
    compared = filecmp.dircmp(left, right, ignore=["__pycache__"])
    pending = [(compared, Path())]
    while pending:
        here, prefix = pending.pop()
        found += [str(prefix / name) for name in here.left_only + here.right_only]
        _, mismatch, errors = filecmp.cmpfiles(
            here.left, here.right, here.common_files, shallow=False
        )
        found += [str(prefix / name) for name in mismatch + errors]
        pending += [(sub, prefix / name) for name, sub in here.subdirs.items()]
    return sorted(found)


def test_every_fixture_script_is_found() -> None:
    assert len(SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=str)
def test_the_script_writes_the_committed_fixtures(script: Path, tmp_path: Path) -> None:
    copy = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, str(copy / script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert differing(copy, FIXTURES) == []


def test_the_comparison_sees_a_changed_byte(tmp_path: Path) -> None:
    left, right = tmp_path / "a", tmp_path / "b"
    for side in (left, right):
        (side / "sub").mkdir(parents=True)
        (side / "sub" / "f.log").write_bytes(b"same")
    assert differing(left, right) == []
    (right / "sub" / "f.log").write_bytes(b"samE")
    (right / "extra.log").write_bytes(b"")
    assert differing(left, right) == ["extra.log", "sub/f.log"]
