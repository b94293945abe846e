"""Table cells that hold no usable number (`inf`, `-inf`, `nan`, 2**70, four hundred digits):
`profile summary`, `baseline add` and `monitor summary` name each as a malformed cell in their
problems and summarise the rest, as the README promises; never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.npuwatch_command import run_npuwatch

MSPROF = FIXTURES / "profiling" / "msprof" / "PROF_000001_20250302093000123_KQZMTRWPBDYHXSNA"
MONITOR = FIXTURES / "debug_tools" / "monitor" / "clean_flat"
BAD_CELLS = {
    "inf": "inf",
    "-inf": "-inf",
    "nan": "nan",
    "2**70": str(2**70),
    "10**400": "1" + "0" * 400,
}


def with_cell(path: Path, line: int, column: str, value: str) -> None:
    """Write `value` into the cell of `column` on line `line` (1 is the header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = value
    lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def damaged_profile(tmp_path: Path, value: str) -> tuple[Path, Path, Path]:
    run = tmp_path / MSPROF.name
    shutil.copytree(MSPROF, run)
    output = run / "mindstudio_profiler_output"
    summary = next(output.glob("op_summary_*.csv"))
    statistic = next(output.glob("op_statistic_*.csv"))
    with_cell(summary, 3, "Task Duration(us)", value)
    with_cell(summary, 4, "Device_id", value)
    with_cell(statistic, 2, "Count", value)
    return run, summary, statistic


@pytest.mark.parametrize("value", BAD_CELLS.values(), ids=list(BAD_CELLS))
def test_profile_summary_names_each_unusable_cell_and_summarises_the_other_rows(
    value: str, tmp_path: Path
) -> None:
    run, summary, statistic = damaged_profile(tmp_path, value)
    ran = run_npuwatch("profile", "summary", "--json", str(run))
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    problems = report["problems"]
    # A duration is required: its row is skipped, and named.
    assert any(p.startswith(f"{summary}:3: Task Duration(us) is ") for p in problems), problems
    if value != "nan":  # elsewhere nan is a missing value, as N/A is; the others are named
        assert any(p.startswith(f"{summary}:4: Device_id is ") for p in problems), problems
        assert any(p.startswith(f"{statistic}:2: Count is ") for p in problems), problems
    assert report["kernel_count"] > 0
    assert len(max(problems, key=len)) < 400  # four hundred digits are not repeated whole


@pytest.mark.parametrize("value", BAD_CELLS.values(), ids=list(BAD_CELLS))
def test_baseline_add_keeps_the_operators_of_a_profile_with_unusable_cells(
    value: str, tmp_path: Path
) -> None:
    run, summary, _ = damaged_profile(tmp_path, value)
    archive = tmp_path / "archive"
    added = run_npuwatch(
        "baseline", "add", str(run), "--model", "m", "--scenario", "s", "--archive", str(archive)
    )
    assert added.returncode == 0, added.stderr
    assert "Traceback" not in added.stderr
    assert f"{summary}:3: Task Duration(us) is " in added.stderr
    assert added.stdout.startswith("stored baseline ")
    compared = run_npuwatch(
        "baseline", "compare", str(run), "--against", "latest", "--model", "m",
        "--scenario", "s", "--archive", str(archive),
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr


@pytest.mark.parametrize("value", BAD_CELLS.values(), ids=list(BAD_CELLS))
def test_monitor_summary_skips_a_row_whose_step_or_stage_is_no_number(
    value: str, tmp_path: Path
) -> None:
    folder = tmp_path / "monitor"
    shutil.copytree(MONITOR, folder)
    table = folder / "exp_avg_0-14.csv"
    with_cell(table, 2, "step", value)
    with_cell(table, 3, "vpp_stage", value)
    ran = run_npuwatch("monitor", "summary", "--json", str(folder))
    assert ran.returncode in (0, 1), ran.stderr
    report = json.loads(ran.stdout)
    assert report["problems"] == [
        f"{table}:2: a step, stage or statistic that is not a number; row skipped",
        f"{table}:3: a step, stage or statistic that is not a number; row skipped",
    ]
    steps = [spike["step"] for spike in report["spikes"]] + [n["steps"] for n in report["nans"]]
    assert all(abs(step) < 2**63 for step in steps if isinstance(step, int))


def test_a_monitored_statistic_that_is_inf_is_a_finding_not_a_malformed_cell(
    tmp_path: Path,
) -> None:
    """In a training monitor's table inf is what the tool is there to catch."""
    folder = tmp_path / "monitor"
    shutil.copytree(MONITOR, folder)
    with_cell(folder / "exp_avg_0-14.csv", 2, "norm", "1" + "0" * 400)
    ran = run_npuwatch("monitor", "summary", str(folder))
    assert ran.returncode == 1, ran.stderr
    assert "NaN/inf in 1 row at step 0" in ran.stdout
