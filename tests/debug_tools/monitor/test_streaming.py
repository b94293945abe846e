"""A monitor folder summarised one file at a time says exactly what the whole run loaded at once
says: spikes whose window crosses files, NaN rows, the latest gradient, and the runs whose files
do not continue one another (which are loaded whole)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.debug_tools.monitor.read import load_monitor
from npuwatch.debug_tools.monitor.read_files import read_statistics
from npuwatch.debug_tools.monitor.spikes import SpikeSettings
from npuwatch.debug_tools.monitor.summary import summarise_monitor, summarise_monitor_folder
from npuwatch.parsers.problem_list import ProblemList
from tests.conftest import FIXTURES

MONITOR = FIXTURES / "debug_tools" / "monitor"
HEADER = "vpp_stage,name,step,micro_step,norm,nans\n"


def _rows(steps: range, spikes: dict[int, float]) -> str:
    """Two modules, two micro steps; module a's norm is multiplied at the steps of `spikes`."""
    lines = []
    for step in steps:
        for name in ("a.output", "b.output"):
            for micro in (0, 1):
                norm = 1.0 + 0.01 * ((step * 7 + micro) % 5)
                if name == "a.output" and micro == 1:
                    norm *= spikes.get(step, 1.0)
                lines.append(f"0,{name},{step},{micro},{norm:.6g},0\n")
    return "".join(lines)


def _split_run(root: Path, steps: int, per_file: int, spikes: dict[int, float]) -> Path:
    folder = root / "rank3"
    folder.mkdir(parents=True)
    for first in range(0, steps, per_file):
        last = min(first + per_file, steps) - 1
        text = HEADER + _rows(range(first, last + 1), spikes)
        (folder / f"actv_{first}-{last}.csv").write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("fixture", ["two_ranks", "clean_flat"])
@pytest.mark.parametrize(
    "settings",
    [SpikeSettings(), SpikeSettings(ratio=1.5, window=5, ops=("norm", "max", "mean"))],
    ids=["default", "low-ratio-short-window"],
)
def test_the_fixtures_read_file_by_file_give_the_whole_run_summary(
    fixture: str, settings: SpikeSettings
) -> None:
    streamed = summarise_monitor_folder(MONITOR / fixture, spikes=settings)
    whole = summarise_monitor(load_monitor(MONITOR / fixture), spikes=settings)
    assert streamed.to_dict() == whole.to_dict()


def test_a_spike_whose_window_lies_in_earlier_files_is_found(tmp_path: Path) -> None:
    # Files of 7 steps and a window of 20: the window of step 30 spans four files.
    root = _split_run(tmp_path / "split", 60, 7, {30: 10.0, 44: 8.0})
    settings = SpikeSettings(ratio=3.0, window=20)
    summary = summarise_monitor_folder(root, spikes=settings)
    [group] = summary.spikes
    assert (group.rank, group.data_type, group.steps, group.names) == (
        3,
        "actv",
        [30, 44],
        ["a.output"],
    )
    assert summary.to_dict() == summarise_monitor(load_monitor(root), spikes=settings).to_dict()


def test_a_spike_before_a_full_window_is_not_judged_even_across_files(tmp_path: Path) -> None:
    root = _split_run(tmp_path / "split", 30, 4, {19: 50.0, 20: 50.0})
    [group] = summarise_monitor_folder(root, spikes=SpikeSettings(window=20)).spikes
    assert group.steps == [20]


def test_nan_rows_and_the_latest_gradient_are_gathered_over_the_files(tmp_path: Path) -> None:
    folder = tmp_path / "rank0"
    folder.mkdir()
    header = "vpp_stage,name,step,norm,nans\n"
    (folder / "grad_reduced_0-1.csv").write_text(
        header + "0,w1,0,1.0,0\n0,w2,0,nan,1\n0,w1,1,1.0,0\n0,w2,1,2.0,0\n", encoding="utf-8"
    )
    (folder / "grad_reduced_2-2.csv").write_text(
        header + "0,w1,2,3.0,2\n0,w2,2,4.0,0\n", encoding="utf-8"
    )
    summary = summarise_monitor_folder(tmp_path)
    [nan] = summary.nans
    assert (nan.metric, nan.count, nan.steps, nan.names) == ("norm,nans", 2, [0, 2], ["w2", "w1"])
    [rank] = summary.ranks
    assert (rank.last_step, rank.grad_norm, rank.largest_name, rank.largest_norm) == (
        2,
        5.0,
        "w2",
        4.0,
    )


def test_two_folders_of_one_rank_are_summarised_whole(tmp_path: Path) -> None:
    _split_run(tmp_path / "run" / "first", 40, 10, {30: 10.0})
    _split_run(tmp_path / "run" / "second", 40, 10, {35: 10.0})
    root = tmp_path / "run"
    summary = summarise_monitor_folder(root)
    assert summary.to_dict() == summarise_monitor(load_monitor(root)).to_dict()
    assert [table.rows for table in summary.tables] == [320]


def test_files_with_different_columns_keep_the_shared_ones_and_say_so(tmp_path: Path) -> None:
    root = _split_run(tmp_path / "run", 30, 10, {})
    last = root / "rank3" / "actv_20-29.csv"
    last.write_text("vpp_stage,name,step,micro_step,norm\n0,a.output,20,0,1.0\n", encoding="utf-8")
    summary = summarise_monitor_folder(root)
    assert summary.problems == [
        "actv rank 3: the files have different columns; only ['vpp_stage', 'name', 'step', "
        "'micro_step', 'norm'] are kept"
    ]
    assert [(table.ops, table.rows) for table in summary.tables] == [(["norm"], 81)]


def test_a_healthy_file_is_read_with_its_declared_types(tmp_path: Path) -> None:
    path = tmp_path / "exp_avg_0-1.csv"
    path.write_text(
        "vpp_stage, name, step, norm, nans,\n0, w, 0, 1.5, 0,\n0, w, 1, 1.25, 3,\n",
        encoding="utf-8",
    )
    problems = ProblemList(str(path))
    frame = read_statistics(path, problems)
    assert frame is not None and problems.finish() == []
    assert {column: str(frame[column].dtype) for column in frame.columns} == {
        "vpp_stage": "int64",
        "name": "category",
        "step": "int64",
        "norm": "float64",
        "nans": "float64",
    }
    assert frame["nans"].tolist() == [0.0, 3.0]


def test_spaces_after_commas_far_into_a_file_are_skipped_like_at_its_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "grad_reduced_0-9000.csv"
    rows = "".join(f"0,w,{step},1.0\n" for step in range(9000))
    path.write_text("vpp_stage,name,step,norm\n" + rows + "0, w2, 9000, 2.5\n", encoding="utf-8")
    problems = ProblemList(str(path))
    frame = read_statistics(path, problems)
    assert frame is not None and problems.finish() == []
    assert list(frame["name"].cat.categories) == ["w", "w2"]
    assert frame.iloc[-1][["step", "norm"]].tolist() == [9000, 2.5]
