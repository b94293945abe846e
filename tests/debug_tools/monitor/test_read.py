"""msprobe monitor output read into tables and alerts: both layouts, the rank from the folder or
the tag, damaged rows and files as problems, and the generator that rewrites the fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.debug_tools.make_monitor import write_all

from npuwatch.debug_tools.monitor.read import load_monitor
from npuwatch.debug_tools.monitor.read_files import UNKNOWN_RANK
from npuwatch.debug_tools.monitor.spikes import SpikeSettings, find_spikes
from tests.conftest import FIXTURES

MONITOR = FIXTURES / "debug_tools" / "monitor"
TWO_RANKS = MONITOR / "two_ranks"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_generator_rewrites_the_committed_fixtures_byte_for_byte(tmp_path: Path) -> None:
    write_all(tmp_path)
    assert _files(tmp_path) == _files(MONITOR)


def test_rank_folders_give_each_table_its_rank_and_micro_step_is_kept() -> None:
    run = load_monitor(TWO_RANKS)
    shapes = [(t.data_type, t.rank, t.ops, len(t.frame)) for t in run.tables]
    assert shapes == [
        ("actv", 0, ("norm", "min", "max"), 240),
        ("actv", 1, ("norm", "min", "max"), 240),
        ("grad_reduced", 0, ("norm", "min", "max", "mean", "nans"), 239),
        ("grad_reduced", 1, ("norm", "min", "max", "mean", "nans"), 240),
    ]
    assert "micro_step" in run.tables[0].frame.columns
    assert "micro_step" not in run.tables[2].frame.columns
    assert run.tables[2].frame["step"].is_monotonic_increasing


def test_the_short_row_and_the_broken_json_are_problems_with_their_line() -> None:
    problems = load_monitor(TWO_RANKS).problems
    assert problems == [
        f"{TWO_RANKS}/rank0/grad_reduced_40-59.csv:23: 5 fields where the header has 8; "
        "row skipped",
        f"{TWO_RANKS}/anomaly_detected/anomaly_rank3.json:14: not JSON (Expecting ',' "
        "delimiter); file skipped",
    ]


def test_alerts_carry_rule_metric_data_type_and_rank() -> None:
    run = load_monitor(TWO_RANKS)
    alerts = [(a.rank, a.step, a.rule, a.metric, a.data_type, a.module) for a in run.anomalies]
    assert alerts == [
        (0, 23, "AnomalyTurbulence", "norm", "grad_reduced", "0:layers.0.mlp.fc1.weight"),
        (1, 37, "AnomalyNan", "norm", "grad_reduced", "0:layers.0.attention.qkv.weight"),
        (1, 37, "AnomalyNan", "norm", "grad_reduced", "0:layers.0.mlp.fc1.weight"),
    ]
    assert [a.step for a in run.analysed] == [37, 37, 23]


def test_a_flat_folder_takes_the_rank_from_the_tensorboard_tag() -> None:
    run = load_monitor(MONITOR / "clean_flat")
    assert [(t.data_type, t.rank, len(t.frame)) for t in run.tables] == [
        ("exp_avg", 0, 120),
        ("exp_avg", 1, 120),
        ("grad_reduced", 0, 120),
        ("grad_reduced", 1, 120),
    ]
    assert list(run.tables[2].frame["name"].cat.categories) == [
        "0:embedding.word_embeddings.weight",
        "0:layers.0.attention.qkv.weight",
        "0:layers.0.mlp.fc1.weight",
        "0:output_layer.weight",
    ]
    assert run.problems == [] and run.anomalies == []


def test_a_flat_folder_without_tags_has_an_unknown_rank(tmp_path: Path) -> None:
    (tmp_path / "grad_unreduced_0-1.csv").write_text(
        "vpp_stage, name, step, norm, nans\n0, w, 0, 1.5, 0\n0, w, 1, 1.6, 0\n", encoding="utf-8"
    )
    [table] = load_monitor(tmp_path).tables
    assert (table.data_type, table.rank, table.ops) == (
        "grad_unreduced",
        UNKNOWN_RANK,
        ("norm", "nans"),
    )


def test_damaged_cells_and_lines_are_dropped_and_named_but_real_nan_is_kept(
    tmp_path: Path,
) -> None:
    (tmp_path / "rank2").mkdir()
    (tmp_path / "rank2" / "actv_grad_0-9.csv").write_text(
        "vpp_stage,name,step,micro_step,norm,max,\n"
        "0,m.output,0,0,1.0,0.5,\n"
        "0,m.output,x,0,1.0,0.5,\n"
        "\n"
        "0,m.output,2,0,nan,inf,\n"
        "0,m.output,3,0,1.0,0.5,7,8\n"
        "0,m.output,4,0\n"
        "0,m.output,5,0,1.1,0.6,\n",
        encoding="utf-8",
    )
    run = load_monitor(tmp_path)
    [table] = run.tables
    assert (table.data_type, table.rank, table.ops) == ("actv_grad", 2, ("norm", "max"))
    assert table.frame["step"].tolist() == [0, 2, 5]
    assert run.problems == [
        f"{tmp_path}/rank2/actv_grad_0-9.csv:6: 8 fields where the header has 7; row skipped",
        f"{tmp_path}/rank2/actv_grad_0-9.csv:3: a step, stage or statistic that is not a "
        "number; row skipped",
        f"{tmp_path}/rank2/actv_grad_0-9.csv:7: 4 fields where the header has 7; row skipped",
    ]


@pytest.mark.parametrize(
    "document",
    [
        '[{"rank": 2, "step": 5, "message": "Rule AnomalyNan reports anomaly signal in '
        "('0:m/rank2/output', 'max') at step 5.\"}]",
        '{"top_anomalies": [{"rank": 2, "step": 5, "tag_name": "0:m/rank2/output", '
        '"message": "Rule AnomalyNan reports anomaly signal in (\'0:m/rank2/output\', '
        "'max') at step 5.\"}]}",
    ],
    ids=["list", "object-holding-a-list"],
)
def test_anomaly_analyse_is_read_whatever_its_container(tmp_path: Path, document: str) -> None:
    (tmp_path / "anomaly_analyse.json").write_text(document, encoding="utf-8")
    [entry] = load_monitor(tmp_path).analysed
    assert (entry.rank, entry.step, entry.rule, entry.metric) == (2, 5, "AnomalyNan", "max")


def test_a_spike_is_found_only_after_a_full_window() -> None:
    run = load_monitor(TWO_RANKS)
    gradients = run.tables[2].frame
    found = find_spikes(gradients, "norm", SpikeSettings(ratio=3.0, window=20))
    assert [(s.step, s.name, round(s.times, 1)) for s in found] == [
        (23, "0:layers.0.mlp.fc1.weight", 11.5)
    ]
    assert find_spikes(gradients, "norm", SpikeSettings(ratio=3.0, window=24)) == []
    assert find_spikes(gradients, "norm", SpikeSettings(ratio=12.0, window=20)) == []
