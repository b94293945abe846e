"""Profiling output (msprof, torch_npu) with damaged tables: every row of a CSV is read or named
in a problem, and `profile summary` and `baseline add` keep their exit codes whatever a cell
holds (the README promises that malformed rows are never fatal)."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from npuwatch.profiling.msprof.layout import find_profile_runs, run_files
from npuwatch.profiling.msprof.run import _PARSERS
from tests.conftest import FIXTURES
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.debug_outputs import describe_damage
from tests.fuzz.table_text import data_rows, mutated_table, problem_lines

PROFILES = FIXTURES / "profiling"


@functools.cache
def runs() -> tuple[Path, ...]:
    return tuple(find_profile_runs(PROFILES))


@functools.cache
def csv_files() -> tuple[tuple[str, Path], ...]:
    """(kind, path) of every profiling CSV of the fixtures."""
    found = []
    for run in runs():
        for kind, paths in run_files(run).files.items():
            found += [(kind, path) for path in paths if path.suffix == ".csv"]
    return tuple(sorted(set(found)))


@st.composite
def damaged_csv(draw: st.DrawFn) -> tuple[str, str]:
    kind, path = draw(st.sampled_from(csv_files()))
    return kind, draw(mutated_table(path.read_text(encoding="utf-8-sig")))


@fuzz_settings(150)
@given(table=damaged_csv())
def test_every_row_of_any_profiling_table_is_read_or_named_in_a_problem(
    table: tuple[str, str],
) -> None:
    kind, text = table
    parsed = _PARSERS[kind](text.encode("utf-8", "surrogatepass"), "t.csv")
    named = problem_lines(parsed.problems, "t.csv")
    assert len(parsed.frame) <= data_rows(text)
    if named is not None:
        # A row is read, or named; a row read with a cell left empty is both.
        assert len(parsed.frame) + len(named) >= data_rows(text), parsed.problems


@st.composite
def damaged_run(draw: st.DrawFn, base: Path) -> Path:
    """A copy of a fixture run under `base` with one of its tables damaged."""
    source = draw(st.sampled_from(runs()))
    copy = base / source.name
    shutil.copytree(source, copy)
    tables = sorted(p for p in copy.rglob("*.csv"))
    target = draw(st.sampled_from(tables))
    target.write_text(
        draw(mutated_table(target.read_text(encoding="utf-8-sig"))),
        encoding="utf-8",
        errors="surrogatepass",
    )
    note(describe_damage(source / target.relative_to(copy), target))
    return copy


@fuzz_settings(30)
@given(data=st.data())
def test_profile_summary_and_baseline_add_keep_their_codes_on_any_damaged_run(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.mktemp("profile")
    run = data.draw(damaged_run(base))
    summary = run_in_process("profile", "summary", str(run), "--json")
    assert_kept_the_contract(summary)
    added = run_in_process(
        "baseline", "add", str(run), "--model", "m", "--scenario", "s",
        "--date", "2025-01-01", "--archive", str(base / "archive"),
    )  # fmt: skip
    assert_kept_the_contract(added, codes=(0, 2))


def run_with(table: str, column: str, cell: str, base: Path) -> Path:
    """A copy of the msprof fixture run whose `table` has `cell` in `column` of its first row."""
    run = PROFILES / "msprof" / "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA"
    copy = base / run.name
    shutil.copytree(run, copy)
    path = next(copy.rglob(f"{table}_*.csv"))
    lines = path.read_text(encoding="utf-8").split("\n")
    cells = lines[1].split(",")
    cells[lines[0].split(",").index(column)] = cell
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines), encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    ("table", "column", "cell"),
    [
        ("op_summary", "Device_id", "inf"),
        ("op_summary", "Task Duration(us)", "inf"),
        ("op_statistic", "Count", "1e400"),
        ("op_statistic", "Count", "18446744073709551616"),
        ("op_statistic", "Total Time(us)", "1e400"),
        ("npu_mem", "hbm(KB)", "9" * 400),
    ],
)
def test_a_cell_that_is_infinite_or_past_64_bits_is_no_crash(
    table: str, column: str, cell: str, tmp_path: Path
) -> None:
    run = run_with(table, column, cell, tmp_path)
    assert_kept_the_contract(run_in_process("profile", "summary", str(run), "--json"))
    added = run_in_process(
        "baseline", "add", str(run), "--model", "m", "--scenario", "s",
        "--date", "2025-01-01", "--archive", str(tmp_path / "archive"),
    )  # fmt: skip
    assert_kept_the_contract(added, codes=(0, 2))
