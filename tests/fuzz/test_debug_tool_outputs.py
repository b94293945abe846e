"""The debugging tools' outputs, damaged: every row of a compare or monitor table is read or
named in a problem, and `precision`, `monitor`, `sanitizer` and `profile summary` (msOpProf)
keep their exit codes whatever a cell, a JSON value or a line of a report holds."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npuwatch.debug_tools.monitor.read_files import read_statistics
from npuwatch.debug_tools.precision.read.compare_table import read_compare_table
from npuwatch.parsers.problem_list import ProblemList
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.debug_outputs import DEBUG_TOOLS, damaged_output
from tests.fuzz.table_text import data_rows, mutated_table, problem_lines


@functools.cache
def compare_tables() -> tuple[Path, ...]:
    return tuple(sorted((DEBUG_TOOLS / "precision").rglob("compare_result*.csv")))


@functools.cache
def monitor_tables() -> tuple[Path, ...]:
    return tuple(sorted((DEBUG_TOOLS / "monitor").rglob("*.csv")))


@fuzz_settings(100)
@given(source=st.sampled_from(compare_tables()), data=st.data())
def test_every_row_of_any_compare_table_is_read_or_named_in_a_problem(
    source: Path, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = data.draw(mutated_table(source.read_text(encoding="utf-8")))
    path = tmp_path_factory.mktemp("compare") / source.name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    table = read_compare_table(path)
    named = problem_lines(table.problems, str(path))
    assert len(table.rows) <= data_rows(text)
    if named is not None:
        assert len(table.rows) + len(named - {1}) == data_rows(text), table.problems


@fuzz_settings(100)
@given(source=st.sampled_from(monitor_tables()), data=st.data())
def test_every_row_of_any_monitor_table_is_read_or_named_in_a_problem(
    source: Path, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = data.draw(mutated_table(source.read_text(encoding="utf-8")))
    path = tmp_path_factory.mktemp("monitor") / source.name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    problems = ProblemList(str(path))
    frame = read_statistics(path, problems)
    listed = problems.finish()
    named = problem_lines(listed, str(path))
    read = 0 if frame is None else len(frame)
    assert read <= data_rows(text)
    if named is not None and frame is not None:
        assert read + len(named - {1}) == data_rows(text), listed


@fuzz_settings(60)
@given(data=st.data())
def test_the_summaries_keep_their_codes_on_any_damaged_output(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    command, output = data.draw(damaged_output(tmp_path_factory.mktemp("debug")))
    assert_kept_the_contract(run_in_process(command, "summary", str(output), "--json"))
    assert_kept_the_contract(run_in_process(command, "summary", str(output)))
