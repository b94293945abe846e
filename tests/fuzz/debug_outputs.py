"""Damaged outputs of the debugging tools (msprobe compare, overflow and monitor, the API
accuracy checker, msit, msSanitizer, msaicerr, msOpProf): a copy of a fixture with one file
damaged the way its format breaks (a CSV or XLSX cell, a JSON value, a line of text)."""

from __future__ import annotations

import difflib
import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

from hypothesis import note
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.fuzz.log_text import MUTATIONS
from tests.fuzz.table_text import HOSTILE_CELLS, mutated_table

DEBUG_TOOLS = FIXTURES / "debug_tools"
PRECISION = ("msit", "overflow", "acc_check", "damaged", "md5", "summary", "ptdbg_2023")
PRECISION_WORKBOOKS = ("compare_4rank", "merge", "first_mismatch")
OUTPUTS: dict[str, tuple[str, ...]] = {
    "precision": tuple(f"precision/{name}" for name in PRECISION + PRECISION_WORKBOOKS),
    "monitor": ("monitor/clean_flat", "monitor/two_ranks"),
    "sanitizer": ("sanitizer", "sanitizer/msaicerr_out"),
    "profile": tuple(
        f"opprof/{path.name}" for path in sorted((DEBUG_TOOLS / "opprof").glob("OPPROF_*"))
    ),
}
"""The command that reads each kind of output, and the fixture outputs of that kind."""

HOSTILE_JSON: tuple[Any, ...] = (
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    2**64,
    -(2**63) - 1,
    10**400,
    -1,
    None,
    True,
    "",
    "inf",
    "\x1b]52;c;ZXZpbA==\x07",
    [],
    {},
    [[[[[]]]]],
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _leaves(item, (*path, key))] or [path]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _leaves(item, (*path, i))] or [path]
    return [path]


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


@st.composite
def damaged_json(draw: st.DrawFn, text: str) -> str:
    try:
        document = json.loads(text)
    except ValueError:
        return text
    for _ in range(draw(st.integers(1, 3))):
        leaves = _leaves(document)
        document = _replace(
            document, draw(st.sampled_from(leaves)), draw(st.sampled_from(HOSTILE_JSON))
        )
    return json.dumps(document)  # inf and nan as JSON's readers write them: Infinity, NaN


@st.composite
def damaged_text(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(st.sampled_from(MUTATIONS))(draw, lines[at])
    return b"\n".join(lines)


def damage_xlsx(path: Path, seed: int, value: Any) -> None:
    """One cell of the workbook's first sheet given `value` (openpyxl writes it as a number
    or a string, as a spreadsheet user could)."""
    from openpyxl import load_workbook  # the dev extra: what fixtures/ writes XLSX with

    book = load_workbook(path)
    sheet = book.worksheets[0]
    chooser = random.Random(seed)
    row = chooser.randint(1, max(sheet.max_row, 1))
    column = chooser.randint(1, max(sheet.max_column, 1))
    sheet.cell(row=row, column=column, value=value)
    book.save(path)


@st.composite
def damaged_output(draw: st.DrawFn, base: Path) -> tuple[str, Path]:
    """(the command, a damaged copy under `base` of a fixture output it reads)."""
    command = draw(st.sampled_from(sorted(OUTPUTS)))
    source = DEBUG_TOOLS / draw(st.sampled_from(OUTPUTS[command]))
    copy = base / source.name
    shutil.copytree(source, copy)
    files = sorted(p for p in copy.rglob("*") if p.is_file())
    target = draw(st.sampled_from(files))
    suffix = target.suffix.lower()
    if suffix == ".csv":
        text = target.read_text(encoding="utf-8", errors="surrogateescape")
        target.write_text(draw(mutated_table(text)), encoding="utf-8", errors="surrogateescape")
    elif suffix == ".json":
        target.write_text(draw(damaged_json(target.read_text(encoding="utf-8"))), encoding="utf-8")
    elif suffix == ".xlsx":
        cell = draw(
            st.sampled_from(HOSTILE_CELLS) | st.sampled_from([1e308, -1e308, 2**63 - 1, 10**20])
        )
        damage_xlsx(target, draw(st.integers(0, 2**16)), cell)
        note(f"a cell of {target.name} set to {cell!r}")
    else:
        target.write_bytes(draw(damaged_text(target.read_bytes())))
    note(describe_damage(source / target.relative_to(copy), target))
    return command, copy


def describe_damage(original: Path, damaged: Path) -> str:
    """What changed in a file, for the failure report: a diff of its text, or the cell of a
    workbook."""
    if damaged.suffix.lower() == ".xlsx":
        return f"damaged {damaged.name}: one cell changed (see damage_xlsx)"
    before = original.read_bytes().decode("utf-8", "replace").splitlines()
    after = damaged.read_bytes().decode("utf-8", "replace").splitlines()
    diff = difflib.unified_diff(before, after, str(original), str(damaged), n=0, lineterm="")
    return "\n".join(line[:300] for line in list(diff)[:24])
