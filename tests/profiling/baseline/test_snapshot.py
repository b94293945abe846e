"""A profile as a baseline: one table for all ranks, each rank's table, steps, and the CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from npuwatch.profiling.baseline.snapshot import (
    as_csv,
    profile_snapshot,
    read_operator_csv,
    stored_files,
    stored_metadata,
)
from npuwatch.profiling.msprof.operators import OPERATOR_COLUMNS
from npuwatch.profiling.msprof.run import load_profiles
from tests.conftest import FIXTURES

TORCH = FIXTURES / "profiling" / "torch_2rank"
OLD_MSPROF = FIXTURES / "profiling" / "msprof_old"


def test_two_ranks_make_one_table_and_keep_their_own() -> None:
    snapshot = profile_snapshot(load_profiles(TORCH), TORCH)
    assert snapshot.ranks == 2 and snapshot.rank_steps == 6
    assert [rank.file for rank in snapshot.rank_tables] == ["ranks/rank-0.csv", "ranks/rank-1.csv"]
    matmul = snapshot.table[snapshot.table["op_type"] == "MatMulV2"].iloc[0]
    per_rank = [rank.table[rank.table["op_type"] == "MatMulV2"] for rank in snapshot.rank_tables]
    assert matmul["count"] == sum(int(table["count"].sum()) for table in per_rank) == 84
    assert snapshot.cann_version == "8.1.RC1" and snapshot.torch_npu_version == "2.5.1.post1"
    assert set(stored_files(snapshot)) == {"op_summary.csv", "ranks/rank-0.csv", "ranks/rank-1.csv"}


def test_the_metadata_says_where_the_profile_came_from_and_how_long_it_ran() -> None:
    metadata = stored_metadata(profile_snapshot(load_profiles(TORCH), TORCH))
    assert metadata["source"] == str(TORCH)
    assert metadata["operators"] == 20 and metadata["rank_steps"] == 6
    assert metadata["total_us"] == pytest.approx(82836.519, abs=0.001)
    assert [rank["steps"] for rank in metadata["ranks"]] == [3, 3]
    assert metadata["ranks"][0]["file"] == "ranks/rank-0.csv"


def test_a_profile_without_step_times_has_no_steps() -> None:
    snapshot = profile_snapshot(load_profiles(OLD_MSPROF), OLD_MSPROF)
    assert snapshot.rank_steps is None and snapshot.per_step_us is None
    assert stored_files(snapshot).keys() == {"op_summary.csv"}


def test_the_csv_reads_back_as_the_table_to_the_nanosecond(tmp_path: Path) -> None:
    table = profile_snapshot(load_profiles(TORCH), TORCH).table
    path = tmp_path / "op_summary.csv"
    path.write_text(as_csv(table))
    assert path.read_text().splitlines()[0] == ",".join(OPERATOR_COLUMNS)
    # Three decimals: half a nanosecond of rounding (and a little float error) at most.
    pd.testing.assert_frame_equal(read_operator_csv(path), table, atol=0.0006, rtol=0)


def test_operator_names_that_look_missing_stay_names(tmp_path: Path) -> None:
    path = tmp_path / "op_summary.csv"
    path.write_text(",".join(OPERATOR_COLUMNS) + "\nNA,null,,2,4.0,2.0,,\n")
    row = read_operator_csv(path).iloc[0]
    assert (row["op_name"], row["op_type"], row["task_type"]) == ("NA", "null", "")
    assert row["count"] == 2 and pd.isna(row["min_us"])


def test_a_csv_that_is_no_operator_table_says_which_header_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "op_summary.csv"
    path.write_text("Op Name,Duration\nCast,1\n")
    with pytest.raises(ValueError, match="op_name,op_type,task_type,count"):
        read_operator_csv(path)


def test_a_damaged_number_names_its_line_and_column(tmp_path: Path) -> None:
    """An edited archive is an error to fix, not operators with no launches to compare."""
    table = profile_snapshot(load_profiles(TORCH), TORCH).table
    lines = as_csv(table).splitlines()
    cells = lines[3].split(",")
    cells[OPERATOR_COLUMNS.index("total_us")] = "xyz"
    lines[3] = ",".join(cells)
    path = tmp_path / "op_summary.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"op_summary.csv: line 4: total_us 'xyz' is not a number"):
        read_operator_csv(path)
