"""`npuwatch monitor summary`: the golden text and JSON on the fixtures, the exit codes (0 a
clean run, 1 findings, 2 a missing or empty path), the options and --plot."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES, REPO
from tests.golden_files import golden_text
from tests.npuwatch_command import run_npuwatch

TWO_RANKS = Path("fixtures/debug_tools/monitor/two_ranks")
CLEAN = Path("fixtures/debug_tools/monitor/clean_flat")
GOLDEN = FIXTURES / "debug_tools" / "golden"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _summary(*args: str) -> tuple[int, str, str]:
    """The command run from the repository, so that the paths it prints are the same everywhere."""
    result = run_npuwatch("monitor", "summary", *args, cwd=REPO)
    return result.returncode, result.stdout, result.stderr


def _golden(name: str, output: str) -> str:
    return golden_text(GOLDEN / name, output)


def test_the_text_summary_matches_its_golden_file_and_exits_1() -> None:
    code, out, err = _summary(str(TWO_RANKS))
    assert (code, err) == (1, "")
    assert out == _golden("monitor_two_ranks.txt", out)


def test_the_json_summary_matches_its_golden_file() -> None:
    code, out, _ = _summary(str(TWO_RANKS), "--json")
    assert code == 1
    assert json.loads(out) == json.loads(_golden("monitor_two_ranks.json", out))


def test_the_summary_names_the_steps_and_ranks_that_went_wrong() -> None:
    document = json.loads(_summary(str(TWO_RANKS), "--json")[1])
    assert [(g["rank"], g["rule"], g["steps"]) for g in document["anomalies"]] == [
        (0, "AnomalyTurbulence", [23]),
        (1, "AnomalyNan", [37]),
    ]
    assert [(g["rank"], g["data_type"], g["steps"]) for g in document["nans"]] == [
        (1, "actv", [37]),
        (1, "grad_reduced", [37]),
    ]
    assert [(g["rank"], g["names"], g["steps"]) for g in document["spikes"]] == [
        (0, ["0:layers.0.mlp.fc1.weight"], [23])
    ]
    assert [(r["rank"], r["first_trouble_step"]) for r in document["ranks"]] == [(0, 23), (1, 37)]
    assert len(document["findings"]) == 5 and len(document["problems"]) == 2


def test_a_clean_run_exits_0() -> None:
    code, out, err = _summary(str(CLEAN))
    assert (code, err) == (0, "")
    assert out.rstrip().endswith("Result: no findings.")


def test_spike_options_change_what_is_a_spike() -> None:
    document = json.loads(_summary(str(TWO_RANKS), "--json", "--spike-ratio", "20")[1])
    assert document["spikes"] == [] and document["spike_ratio"] == 20.0
    document = json.loads(_summary(str(TWO_RANKS), "--json", "--spike-op", "max")[1])
    assert [(g["metric"], g["steps"]) for g in document["spikes"]] == [("max", [23])]


def test_a_missing_or_empty_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out, err = _summary(str(tmp_path / "nothing"))
    assert (code, out) == (2, "")
    assert err == (
        f"npuwatch: monitor folder {tmp_path / 'nothing'} does not exist: give msprobe "
        "monitor's output folder ($MONITOR_OUTPUT_DIR, ./monitor_output)\n"
    )
    code, _, err = _summary(str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "no monitor output in" in err


def test_the_plot_is_a_real_png(tmp_path: Path) -> None:
    target = tmp_path / "grad.png"
    code, _, err = _summary(str(TWO_RANKS), "--plot", str(target), "--metric", "norm")
    assert (code, err) == (1, "")
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 20_000


def test_an_unknown_plot_metric_says_which_ones_exist(tmp_path: Path) -> None:
    code, _, err = _summary(str(CLEAN), "--plot", str(tmp_path / "x.png"), "--metric", "actv:max")
    assert code == 2
    assert "choose --metric among exp_avg:norm, grad_reduced:max" in err


def test_help_teaches_examples_and_exit_status() -> None:
    result = run_npuwatch("monitor", "summary", "--help")
    assert result.returncode == 0
    assert "npuwatch monitor summary ./monitor_output" in result.stdout
    assert "exit status: 0" in result.stdout
