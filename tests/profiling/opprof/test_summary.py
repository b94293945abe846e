"""`npuwatch profile summary OPPROF_…`: the four key figures and the bound of each launch, the
golden text and JSON, exit codes, the plot, and msOpProf baselines gating a slower kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.debug_tools.make_opprof import MEMORY_BOUND_ADVICE, write_opprof

from npuwatch.profiling.opprof.read import load_opprof
from npuwatch.profiling.opprof.summary import LaunchReport, summarise_opprof
from tests.conftest import FIXTURES
from tests.golden_files import golden_text
from tests.npuwatch_command import clean_environment, run_npuwatch

REPO = FIXTURES.parent
OPPROF = "fixtures/debug_tools/opprof"
GOLDEN = FIXTURES / "debug_tools" / "golden"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _launches(folder: str) -> dict[str, LaunchReport]:
    summary = summarise_opprof(load_opprof(REPO / OPPROF / folder), root=folder, top=10)
    return {f"{r.op_name}/{r.device_id}/{r.launch}": r for r in summary.launches}


def test_the_memory_bound_vector_operator_names_mte2() -> None:
    (report,) = _launches("OPPROF_20250302093000_MEMBOUNDVECTORAB").values()
    figures = report.figures
    assert figures.bound == "mte2" and figures.bound_label == "memory-bound (MTE2)"
    assert figures.core_utilisation_pipe == "vector"
    assert figures.core_utilisation_pct == pytest.approx(18.8, abs=0.05)
    assert figures.bandwidth_channel == "GM_to_UB"
    assert figures.bandwidth_usage_pct == pytest.approx(60.9, abs=0.05)
    assert figures.main_memory_gb_s == pytest.approx(4 * 148.815145)
    assert figures.copy_share_pct == pytest.approx(98.1, abs=0.05)
    assert figures.l2_hit_rate_pct == pytest.approx(100 * 1686 / (1686 + 4 * 6049))
    assert figures.conflicts[0].name == "aiv_vec_wait"


def test_the_compute_bound_mix_operator_names_cube_for_each_launch() -> None:
    launches = _launches("OPPROF_20250302094500_COMPUTEBOUNDMIXC")
    mix = [launches[f"matmul_mix_aic/1/{n}"] for n in range(3)]
    assert {report.figures.bound_label for report in mix} == {"compute-bound (cube)"}
    first = mix[0].figures
    assert first.core_utilisation_pipe == "cube"
    assert first.core_utilisation_pct == pytest.approx(82.3)
    assert [share.name for share in first.pipes][:2] == ["cube", "mte1"]
    assert launches["add_custom/1/0"].figures.bound is None


def test_310p_is_vector_bound_and_down_clocked_which_is_a_finding() -> None:
    summary = summarise_opprof(
        load_opprof(REPO / OPPROF / "OPPROF_20240603022812_INFERENCEPRODUCT"), root="x", top=10
    )
    (report,) = summary.launches
    assert report.figures.bound_label == "compute-bound (vector)" and report.down_clocked
    assert report.figures.l2_hit_rate_pct == pytest.approx(99.968201)
    assert [finding.kind for finding in summary.findings] == ["down_clocked"]


def test_devices_are_told_apart_one_computes_the_other_waits_for_data() -> None:
    launches = _launches("OPPROF_20260605170714_RYQFPTCBYWBFCNBI")
    assert launches["allgather_matmul_mix_aic/0/0"].figures.bound == "cube"
    assert launches["allgather_matmul_mix_aic/1/0"].figures.bound == "mte2"


def test_simulator_hotspots_add_the_cores_up() -> None:
    (report,) = _launches("OPPROF_20250302100000_SIMULATORRUNABCD").values()
    lines = report.code_hotspots
    assert lines[0].cycles == 62388 + 56149 and lines[0].cores == 2
    assert report.instruction_hotspots[0].pipe == "MTE2"


def test_mc2_launches_show_their_communication_per_link_and_block_spread() -> None:
    launches = _launches("OPPROF_20260605170714_RYQFPTCBYWBFCNBI")
    waiting = launches["allgather_matmul_mix_aic/1/0"]
    communication = waiting.communication
    assert communication is not None
    assert (communication.tasks, communication.size_bytes) == (5, 9 * 2**20)
    assert communication.time_us == pytest.approx(60.1)
    assert communication.gb_s == pytest.approx(9 * 2**20 / (9.8 + 22.6 + 21.0) / 1e3)
    assert [(link.link_type, link.tasks) for link in communication.links] == [
        ("HCCS", 3), ("ON_CHIP", 1), ("ROCE", 1),
    ]  # fmt: skip
    spread = waiting.block_spread
    assert spread is not None and spread.imbalanced and spread.blocks == 3
    assert spread.slowest == "AIC BLOCK0 (core0.cubecore0)" and spread.slowest_us == 40.0
    assert spread.spread_pct == pytest.approx(100 * (40.0 / 31.2 - 1))
    computing = launches["allgather_matmul_mix_aic/0/0"].block_spread
    assert computing is not None and not computing.imbalanced
    assert computing.spread_pct == pytest.approx(100 * (28.4 / 27.62 - 1))


def test_the_memory_bound_launch_carries_msopprof_advice_and_its_blocks() -> None:
    (report,) = _launches("OPPROF_20250302093000_MEMBOUNDVECTORAB").values()
    assert report.advice == MEMORY_BOUND_ADVICE and report.communication is None
    assert report.visualize_blocks == ["OpBasicInfo", "Trace", "Code", "RoofLine"]
    assert report.block_spread is not None and report.block_spread.blocks == 4
    assert not report.block_spread.imbalanced


def test_simulator_pipes_are_summed_over_the_cores_of_the_trace() -> None:
    (report,) = _launches("OPPROF_20250302100000_SIMULATORRUNABCD").values()
    assert [(p.pipe, round(p.busy_us, 3), p.instructions, p.cores) for p in report.trace_pipes] == [
        ("MTE2", 7.98, 6, 2), ("VECTOR", 3.42, 6, 2), ("MTE3", 1.8, 6, 2),
    ]  # fmt: skip


def test_launches_without_trace_files_keep_their_json_keys() -> None:
    summary = summarise_opprof(load_opprof(REPO / OPPROF), root=OPPROF, top=20)
    launches = {(r["run"], r["folder"]): r for r in summary.to_dict()["launches"]}
    plain = launches["OPPROF_20250302094500_COMPUTEBOUNDMIXC", "matmul_mix_aic/0"]
    for key in ("advice", "visualize_blocks", "communication", "block_spread", "trace_pipes"):
        assert key not in plain
    mc2 = launches["OPPROF_20260605170714_RYQFPTCBYWBFCNBI", "device1/allgather_matmul_mix_aic/0"]
    assert mc2["communication"]["links"][0] == {
        "link_type": "HCCS", "transport_type": "SDMA", "tasks": 3, "size_bytes": 4194304.0,
        "time_us": 29.3, "transfer_us": 22.6, "gb_s": 185.589,
    }  # fmt: skip
    assert mc2["block_spread"]["imbalanced"] is True and "advice" not in mc2


def test_the_text_names_a_load_imbalance_and_lists_the_advice() -> None:
    code, out, _ = run("profile", "summary", f"{OPPROF}/OPPROF_20260605170714_RYQFPTCBYWBFCNBI")
    assert code == 0
    assert "    communication        5 tasks, 60.1 µs: 9.0 MiB moved at 176.7 GB/s" in out
    assert "      ROCE/RDMA          1 task, 21.0 µs: 1.0 MiB moved at 49.9 GB/s" in out
    assert "load imbalance? AIC BLOCK0 (core0.cubecore0) ran 28.2% longer" in out
    code, out, _ = run("profile", "summary", f"{OPPROF}/OPPROF_20250302093000_MEMBOUNDVECTORAB")
    assert "    msOpProf advice\n      - The MTE2 pipe of the vector cores" in out


def run(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    done = run_npuwatch(*args, cwd=cwd, env=clean_environment())
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("case", "path", "code"),
    [
        ("opprof_all", OPPROF, 1),
        ("opprof_memory_bound", f"{OPPROF}/OPPROF_20250302093000_MEMBOUNDVECTORAB", 0),
    ],
)
def test_the_text_and_json_reports_match_their_golden_files(
    case: str, path: str, code: int
) -> None:
    text = run("profile", "summary", path)
    document = run("profile", "summary", path, "--json")
    assert text[0] == code and document[0] == code
    assert text[2] == "" and document[2] == ""
    assert text[1] == golden_text(GOLDEN / f"{case}.txt", text[1])
    assert json.loads(document[1]) == json.loads(golden_text(GOLDEN / f"{case}.json", document[1]))


def test_the_text_report_leads_with_the_four_key_figures() -> None:
    code, out, _ = run("profile", "summary", f"{OPPROF}/OPPROF_20250302093000_MEMBOUNDVECTORAB")
    assert code == 0
    for label in ("bound ", "AI Core utilisation ", "bandwidth use ", "copy share (MTE) "):
        assert f"    {label}" in out
    assert "memory-bound (MTE2)" in out and out.rstrip().endswith("Result: no findings.")


def test_a_folder_without_launches_is_exit_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "OPPROF_20250302093000_EMPTYEMPTYEMPTYE").mkdir()
    code, out, err = run("profile", "summary", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith(f"npuwatch: no operator launch in {tmp_path} (")
    assert err.count("\n") == 1


def test_the_plot_is_a_real_png(tmp_path: Path) -> None:
    target = tmp_path / "opprof.png"
    code, _, _ = run("profile", "summary", OPPROF, "--plot", str(target))
    assert code == 1
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 20_000


def test_a_slower_kernel_fails_the_baseline_gate(tmp_path: Path) -> None:
    archive = str(tmp_path / "archive")
    slow = write_opprof(tmp_path / "slow", slowdown=1.3)
    add = run_npuwatch(
        "baseline", "add", OPPROF, "--model", "matmul", "--scenario", "m4096",
        "--date", "2025-03-02", "--archive", archive, cwd=REPO, env=clean_environment(),
    )  # fmt: skip
    assert add.returncode == 0, add.stderr
    assert add.stdout.startswith("stored baseline 2025-03-02_matmul_m4096: 6 operators, 9 launches")
    stored = json.loads(
        (tmp_path / "archive/baselines/2025-03-02_matmul_m4096/baseline.json").read_text()
    )
    bounds = {item["op_name"]: item["bound_label"] for item in stored["opprof_operators"]}
    assert bounds["matmul_mix_aic"] == "compute-bound (cube)"
    same = run("baseline", "compare", OPPROF, "--against", "latest", "--archive", archive)
    assert same[0] == 0
    slower = run(
        "baseline", "compare", str(slow), "--against", "latest", "--archive", archive, "--json"
    )
    assert slower[0] == 1
    rows = {row["op_name"]: row for row in json.loads(slower[1])["operators"]}
    assert rows["matmul_mix_aic"]["status"] == "slower" and rows["matmul_mix_aic"]["gates"]
    assert rows["matmul_mix_aic"]["delta_avg_pct"] == pytest.approx(30.0)
    assert rows["add_rms_norm_custom"]["status"] == "unchanged"
