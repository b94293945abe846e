"""The precision fixtures are what their generator writes: CSV and JSON byte for byte, .xlsx
cell for cell (a workbook's zip entries carry the time they were written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.debug_tools.make_precision import write_all
from openpyxl import load_workbook

from tests.conftest import FIXTURES

PRECISION = FIXTURES / "debug_tools" / "precision"


def _contents(root: Path) -> dict[str, Any]:
    contents: dict[str, Any] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        key = path.relative_to(root).as_posix()
        if path.suffix == ".xlsx":
            book = load_workbook(path, read_only=True)
            contents[key] = {s.title: list(s.iter_rows(values_only=True)) for s in book.worksheets}
            book.close()
        else:
            contents[key] = path.read_bytes()
    return contents


def test_the_generator_rewrites_the_committed_fixtures(tmp_path: Path) -> None:
    write_all(tmp_path)
    assert _contents(tmp_path) == _contents(PRECISION)


def test_the_fixtures_stay_small() -> None:
    assert sum(p.stat().st_size for p in PRECISION.rglob("*") if p.is_file()) < 200_000
