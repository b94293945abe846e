"""`npuwatch baseline compare` on msOpProf output judges each operator's key figures too: a
kernel that turns memory-bound fails the gate even when its time has not moved, an unchanged run
passes with every delta 0, and a baseline stored before the figures were kept compares as
before (times only)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.debug_tools.make_opprof import write_opprof

from npuwatch.profiling.baseline.opprof_figures import CSV_COLUMNS
from tests.conftest import FIXTURES
from tests.npuwatch_command import clean_environment, run_npuwatch
from tests.scan.test_readme import departure

REPO = FIXTURES.parent
OPPROF = "fixtures/debug_tools/opprof"
NAME = "2025-03-02_matmul_m4096"
BOUND_CHANGE = "matmul_mix_aic: compute-bound (cube) → memory-bound (MTE2)"
OPERATORS = 6
"""Operators of the fixtures with a Task Duration: the figures compare each of them."""


def run(*args: str | Path) -> tuple[int, str, str]:
    done = run_npuwatch(*map(str, args), cwd=REPO, env=clean_environment())
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline of the committed fixtures, with their key figures."""
    folder = tmp_path_factory.mktemp("archive")
    code, out, err = run(
        "baseline", "add", OPPROF, "--model", "matmul", "--scenario", "m4096",
        "--date", "2025-03-02", "--archive", folder,
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"stored baseline {NAME}: 6 operators")
    return folder


@pytest.fixture(scope="module")
def starved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixtures with the mix operator memory-bound and 57 points less utilised."""
    return write_opprof(tmp_path_factory.mktemp("starved"), memory_bound=True)


def compare(archive: Path, prof: Path | str, *more: str) -> tuple[int, str, str]:
    return run("baseline", "compare", prof, "--against", NAME, "--archive", archive, *more)


def figures_of(out: str) -> dict[str, dict[str, Any]]:
    document = json.loads(out)
    return {row["op_name"]: row for row in document["opprof_figures"]["operators"]}


def test_a_kernel_turned_memory_bound_fails_the_gate_and_names_the_change(
    archive: Path, starved: Path
) -> None:
    code, out, _ = compare(archive, starved)
    assert code == 1
    assert "steps unknown" not in out  # an operator's launches have no training steps
    assert out.count(", msOpProf, ") == 2 and " launches" in out
    assert "\nmsOpProf key figures (" in out
    assert "BOUND CHANGED   82.3 → 25.4   -56.9" in out and out.count(BOUND_CHANGE) == 2
    assert "no time regression beyond 10%" in out
    assert out.rstrip().endswith(
        f"KEY FIGURES CHANGED: {BOUND_CHANGE}, AI Core utilisation 82.3% → 25.4% (-56.9 points)"
    )
    # The profiling guide shows an excerpt of this very output.
    problem = departure(guide_excerpt(), out.splitlines())
    assert problem is None, f"docs/guides/profiling.md › baseline compare: {problem}"


def guide_excerpt() -> list[str]:
    """The output lines of the guide's `baseline compare OPPROF_starved` example."""
    lines = (REPO / "docs" / "guides" / "profiling.md").read_text("utf-8").splitlines()
    start = lines.index("$ npuwatch baseline compare OPPROF_starved --against " + NAME)
    return lines[start + 1 : lines.index("```", start)]


def test_the_json_has_the_figures_under_a_stable_key_and_the_times_unchanged(
    archive: Path, starved: Path
) -> None:
    code, out, _ = compare(archive, starved, "--json")
    assert code == 1
    document = json.loads(out)
    assert document["regressed"] is True and document["rules"]["figure_threshold_pp"] == 10.0
    assert {row["status"] for row in document["operators"]} == {"unchanged"}
    assert document["opprof_figures"]["regressed"] is True
    assert document["opprof_figures"]["counts"] == {
        "bound changed": 1, "less utilised": 0, "more utilised": 0, "unchanged": 5,
    }  # fmt: skip
    matmul = figures_of(out)["matmul_mix_aic"]
    assert matmul["baseline_bound"] == "compute-bound (cube)"
    assert matmul["current_bound"] == "memory-bound (MTE2)"
    assert matmul["delta_core_utilisation_pp"] == pytest.approx(-56.9)
    assert matmul["current_core_utilisation_pipe"] == "vector"
    assert matmul["delta_copy_share_pp"] == pytest.approx(11.824)


def test_an_unchanged_run_passes_with_every_figure_delta_zero(
    archive: Path, tmp_path: Path
) -> None:
    code, out, _ = compare(archive, write_opprof(tmp_path), "--json")
    assert code == 0
    rows = figures_of(out)
    assert len(rows) == OPERATORS and not json.loads(out)["regressed"]
    for row in rows.values():
        assert row["status"] == "unchanged" and not row["bound_changed"]
        for figure in ("core_utilisation", "bandwidth_usage", "copy_share"):
            assert row[f"delta_{figure}_pp"] in (0.0, None)
    assert rows["matmul_mix_aic"]["delta_core_utilisation_pp"] == 0.0
    text = compare(archive, OPPROF)
    assert text[0] == 0 and text[1].rstrip().endswith(
        "key figures: 0 bound changed, 0 less utilised, 0 more utilised, 6 unchanged"
    )


def test_a_baseline_stored_before_the_figures_were_kept_compares_on_times_only(
    tmp_path: Path, starved: Path
) -> None:
    folder = tmp_path / "archive"
    assert run(
        "baseline", "add", OPPROF, "--model", "matmul", "--scenario", "m4096",
        "--date", "2025-03-02", "--archive", folder,
    )[0] == 0  # fmt: skip
    metadata_file = folder / "baselines" / NAME / "baseline.json"
    metadata = json.loads(metadata_file.read_text(encoding="utf-8"))
    del metadata["opprof_operators"]
    metadata_file.write_text(json.dumps(metadata), encoding="utf-8")
    code, out, _ = compare(folder, starved)
    assert code == 0
    assert "msOpProf key figures" not in out and "key figures" not in out
    assert out.rstrip().endswith("no regression beyond 10%")
    code, out, _ = compare(folder, starved, "--json")
    assert code == 0 and json.loads(out)["opprof_figures"] is None


def test_the_csv_puts_each_operators_figures_after_its_times(archive: Path, starved: Path) -> None:
    code, out, _ = compare(archive, starved, "--csv")
    assert code == 1
    reader = csv.DictReader(io.StringIO(out))
    assert reader.fieldnames is not None and reader.fieldnames[-len(CSV_COLUMNS) :] == CSV_COLUMNS
    rows = {row["op_name"]: row for row in reader}
    assert len(rows) == OPERATORS
    matmul = rows["matmul_mix_aic"]
    assert (matmul["status"], matmul["gates"]) == ("unchanged", "false")
    assert (matmul["figure_status"], matmul["figure_gates"]) == ("bound changed", "true")
    assert matmul["delta_core_utilisation_pp"] == "-56.900"
    assert rows["add_custom"]["baseline_bound"] == "unknown"


def test_a_threshold_above_the_drop_still_fails_on_the_change_of_bound(
    archive: Path, starved: Path
) -> None:
    code, out, _ = compare(archive, starved, "--figure-threshold", "60pp")
    assert code == 1 and out.rstrip().endswith(f"KEY FIGURES CHANGED: {BOUND_CHANGE}")


def test_a_figure_threshold_in_percent_is_refused_in_one_line(archive: Path) -> None:
    code, out, err = compare(archive, OPPROF, "--figure-threshold", "10%")
    assert code == 2 and out == ""
    assert err.startswith("npuwatch: --figure-threshold '10%': give percentage points")
    assert err.count("\n") == 1


def test_the_help_teaches_the_figure_gate() -> None:
    code, out, _ = run("baseline", "compare", "--help")
    assert code == 0
    assert "--figure-threshold PP" in out and "--figure-threshold 5" in out
    assert "msOpProf key figures" in out and ".opprof_figures.operators[]" in out
