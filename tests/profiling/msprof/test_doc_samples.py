"""Every real data sample of the msprof formats doc, parsed; expectations written by reading it.

The samples are read from ../shared/design/formats/msprof.md at test time (msprof_doc), never
copied here. Header-only tables are in test_doc_headers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from npuwatch.profiling.msprof.communication import parse_communication
from npuwatch.profiling.msprof.kernels import parse_kernels
from npuwatch.profiling.msprof.layout import find_profile_runs, is_run_complete, run_files
from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profile
from npuwatch.profiling.msprof.statistics import parse_op_statistic
from npuwatch.profiling.msprof.steps import parse_step_trace_time, rank_rows
from npuwatch.profiling.msprof.trace import device_of_trace, parse_trace
from tests.profiling.msprof.msprof_doc import (
    block,
    build_tree,
    markdown_table_as_csv,
    tree_listing_paths,
)


def test_the_bf16_matmul_kernel_details_rows_are_read_with_their_quirks() -> None:
    parsed = parse_kernels(
        block("5.1", "Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State"), "k"
    )
    assert parsed.problems == []
    first, second = (row for _, row in parsed.frame.iterrows())
    assert first["op_name"] == "aclnnMatmul_MatMulCommon_MatMulV2"
    assert first["op_type"] == "MatMulV2"
    assert first["task_type"] == "AI_CORE"
    assert first["op_state"] == "dynamic"
    # The quoted start time ends with a TAB in the file.
    assert first["start_us"] == pytest.approx(1736413971558972.912, abs=0.5)
    assert (first["duration_us"], first["wait_us"]) == (185.504, 1.087)
    assert (first["step"], first["model_id"], first["task_id"], first["stream_id"]) == (
        19,
        4294967295,
        61653,
        2,
    )
    # `Block Dim`/`Mix Block Dim` of this era are block_num/mix_block_num.
    assert (first["block_num"], first["mix_block_num"]) == (16, 0)
    # Shapes in literal double quotes lose them; tensors stay separated by `;`.
    assert first["input_shapes"] == "81920,4096;8192,512"
    assert first["output_shapes"] == "4096,512"
    assert first["input_data_types"] == "DT_BF16;DT_BF16"
    assert first["hf32_eligible"] == "NO"
    assert pd.isna(first["context_id"])
    assert first["aic_mac_ratio"] == 0.824
    assert first["cube_utilization_pct"] == 79.295
    assert second["op_type"] == "MatMulV3"
    assert second["input_shapes"] == "81920,1536;8192,4096"
    assert second["block_num"] == 20
    assert second["duration_us"] == 501.17


def test_the_kernel_details_with_hccl_rows_keeps_na_task_ids_and_long_broadcasts() -> None:
    parsed = parse_kernels(
        block("5.1", "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator"), "k"
    )
    assert parsed.problems == []
    frame = parsed.frame
    assert list(frame["op_name"]) == [
        "ZerosLike46",
        "hcom_broadcast__445_0",
        "hcom_broadcast__445_1",
        "Cast66",
    ]
    assert list(frame["task_type"]) == ["AI_VECTOR_CORE", "HCCL", "HCCL", "AI_VECTOR_CORE"]
    assert list(frame["duration_us"]) == [607.98, 308926.68, 62.94, 3.14]
    assert list(frame["wait_us"]) == [0, 2746.77, 3534.57, 261.56]
    assert frame["task_id"].isna().tolist() == [False, True, True, False]
    assert frame["mix_block_num"].isna().tolist() == [False, True, True, False]
    assert list(frame["block_num"]) == [48, 0, 0, 9]
    assert frame["start_us"][0] == pytest.approx(1699529622790614.8, abs=0.5)
    assert frame["input_shapes"][3] == "4,1025"
    assert frame["input_shapes"][0] == "544404480"
    assert frame["aiv_vector_fops"][0] == 137176320


def test_the_hccl_rows_of_the_doc_make_one_operator_line_each(tmp_path: Path) -> None:
    output = tmp_path / "job_1_2_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    text = block("5.1", "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator")
    (output / "kernel_details.csv").write_text(text)
    table = operator_table(load_profile(output))
    assert list(table["op_name"]) == [
        "hcom_broadcast__445_0",
        "ZerosLike46",
        "hcom_broadcast__445_1",
        "Cast66",
    ]
    assert table["count"].tolist() == [1, 1, 1, 1]
    assert table["total_us"].tolist() == [308926.68, 607.98, 62.94, 3.14]


def test_the_old_op_summary_row_has_an_unitless_start_and_unprefixed_metrics() -> None:
    parsed = parse_kernels(block("2.3", "Model ID,Task ID,Stream ID,Op Name"), "op_summary_0_1.csv")
    assert parsed.problems == []
    row = parsed.frame.iloc[0]
    assert (row["op_name"], row["op_type"], row["task_type"]) == (
        "add_custom",
        "add_custom",
        "AI_CORE",
    )
    assert row["start_us"] == pytest.approx(1043640017380.831)
    assert (row["duration_us"], row["wait_us"], row["block_num"]) == (82.11, 0, 8)
    assert (row["task_id"], row["stream_id"], row["model_id"]) == (1, 47, 4294967295)
    assert pd.isna(row["input_shapes"]) and pd.isna(row["output_formats"])
    assert row["vec_ratio"] == 0.0229
    assert row["memory_bound"] == 16.9677
    assert row["aicore_time_us"] == 9.87


def test_the_op_statistic_sample_read_as_the_csv_it_was_rendered_from() -> None:
    csv_text = markdown_table_as_csv(block("3", "| Model Name | OP Type"))
    parsed = parse_op_statistic(csv_text, "op_statistic_0_1.csv")
    assert parsed.problems == []
    frame = parsed.frame
    assert list(frame["op_type"]) == ["TransData", "TransposeD", "Conv2D", "ConcatD", "Cast"]
    # CANN 5 wrote `AI Core`; it reads as AI_CORE.
    assert set(frame["task_type"]) == {"AI_CORE"}
    assert set(frame["model_name"]) == {"rdn_x2_bs1"}
    assert list(frame["count"]) == [4, 1, 150, 129, 2]
    assert list(frame["total_us"]) == [935253.6, 934287.8, 126733.2, 117099.7, 121.6667]
    assert frame["min_us"][0] == 63.80209
    assert frame["avg_us"][2] == 844.8882
    assert frame["max_us"][3] == 1612.917
    assert frame["ratio_pct"][4] == 0.005757


def test_the_markdown_rendering_itself_is_not_a_format_and_says_so() -> None:
    parsed = parse_op_statistic(block("3", "| Model Name | OP Type"), "op_statistic.md")
    assert parsed.frame.empty
    assert len(parsed.problems) == 1
    assert parsed.problems[0].startswith("op_statistic.md:1: op_statistic header expected: ")
    assert "no column 'OP Type'" in parsed.problems[0]


def test_an_op_statistic_alone_gives_the_operator_table_per_type(tmp_path: Path) -> None:
    summary = tmp_path / "PROF_000001_20210815103000000_ABCDEFGHJKLMNPQR" / "device_0" / "summary"
    summary.mkdir(parents=True)
    csv_text = markdown_table_as_csv(block("3", "| Model Name | OP Type"))
    (summary / "op_statistic_0_1.csv").write_text(csv_text)
    run = load_profile(tmp_path)
    table = operator_table(run)
    assert run.kernels.empty and run.device_id == 0
    assert list(table["op_name"]) == list(table["op_type"])
    assert list(table["op_type"]) == ["TransData", "TransposeD", "Conv2D", "ConcatD", "Cast"]
    assert table["avg_us"][0] == pytest.approx(935253.6 / 4)
    assert (table["min_us"][2], table["max_us"][2]) == (78.2812, 1563.906)


def test_the_cluster_step_trace_rows_are_ranks_with_their_step_time() -> None:
    text = block("5.3", "Step,Type,Index,Computing")
    parsed = parse_step_trace_time(text, "cluster_step_trace_time.csv")
    assert parsed.problems == []
    ranks = rank_rows(parsed.frame)
    assert list(ranks["rank"]) == [0, 1, 2]
    assert ranks["step"].isna().all()
    assert ranks["computing_us"][0] == pytest.approx(80309.68717187493)
    assert ranks["communication_not_overlapped_us"][1] == pytest.approx(133385.97745312497)
    assert ranks["free_us"][2] == pytest.approx(1110332.1177812554)
    assert ranks["stage_us"][0] == 1754645.75
    assert ranks["step_us"][0] == pytest.approx(
        80309.68717187493 + 683731.2897031249 + 990605.1042031233
    )


def test_the_elided_stage_row_of_the_cluster_file_is_a_problem_not_a_crash() -> None:
    text = block("5.3", "Step,Type,Index,Computing")
    stage = ',stage,"(0, 1, 2, 3, 4, 5, 6, 7)",81662.19999999994,756374.86,…\n'
    parsed = parse_step_trace_time(text + stage, "cluster_step_trace_time.csv")
    assert len(parsed.frame) == 3
    assert parsed.problems == [
        "cluster_step_trace_time.csv:5: 6 fields where the header has 11; row skipped"
    ]


def test_the_trace_view_events_become_complete_events_with_their_process() -> None:
    lines = [line for line in block("5.4", "{").splitlines() if line.strip()]
    parsed = parse_trace("[" + ",".join(lines) + "]", "trace_view.json")
    assert parsed.problems == []
    frame = parsed.frame.set_index("name")
    assert list(frame.index) == [
        "aten::empty",
        "aclnnInplaceZero_ZerosLikeAiCore_ZerosLike",
        "Computing",
        "Free",
        "AscendCL@aclrtSynchronizeStream",
    ]
    assert frame.loc["aten::empty", "start_us"] == pytest.approx(1704161511420306.491, abs=0.5)
    assert frame.loc["aten::empty", "duration_us"] == 13.08
    assert frame.loc["aten::empty", "process_name"] == "Python"
    assert frame.loc["aten::empty", "process_label"] == "CPU"
    kernel = frame.loc["aclnnInplaceZero_ZerosLikeAiCore_ZerosLike"]
    assert (kernel["process_name"], kernel["thread_name"], kernel["process_label"]) == (
        "Ascend Hardware",
        "Stream 3",
        "NPU",
    )
    assert kernel["task_type"] == "Other"
    assert frame.loc["Computing", "thread_name"] == "Computing"
    assert frame.loc["AscendCL@aclrtSynchronizeStream", "process_name"] == "CANN"
    assert frame.loc["AscendCL@aclrtSynchronizeStream", "duration_us"] == pytest.approx(
        12.77, abs=0.01
    )
    # A bare `NPU` label names no device.
    assert device_of_trace(parsed.frame) is None


def test_the_truncated_cluster_communication_excerpt_is_reported_as_such() -> None:
    parsed = parse_communication(block("5.5", '{"(0, 1)"'), "cluster_communication.json")
    assert parsed.frame.empty
    assert len(parsed.problems) == 1
    assert parsed.problems[0].startswith("cluster_communication.json: not valid JSON")


def test_the_complete_rank_of_the_cluster_communication_excerpt_is_read() -> None:
    text = block("5.5", '{"(0, 1)"').strip()
    cut = text.index(',"1": {…')
    parsed = parse_communication(text[:cut] + "}}}}", "cluster_communication.json")
    assert parsed.problems == []
    assert len(parsed.frame) == 1
    row = parsed.frame.iloc[0]
    assert (row["rank_group"], row["rank"], row["op_name"], row["group"]) == (
        "(0, 1)",
        0,
        "hcom_broadcast__501_0",
        "6297232067196334501",
    )
    assert pd.isna(row["step"])  # the bare "step" key: no step markers
    assert row["start_us"] == 1695054582608213.0
    assert row["elapse_us"] == pytest.approx(121736.94384375)
    assert row["wait_us"] == pytest.approx(115960.64153125)
    assert row["synchronization_us"] == pytest.approx(102699.834)
    assert row["wait_ratio"] == 0.9999
    assert row["hccs_transit_size_mb"] == pytest.approx(0.06393599999999998)
    assert row["hccs_bandwidth_gb_per_s"] == 2.7012
    assert row["pcie_transit_us"] == pytest.approx(11.499890625)
    assert row["rdma_transit_size_mb"] == 0


def test_the_matrix_link_record_of_the_doc_is_json_the_parser_skips() -> None:
    # `{src_rank}-{dst_rank}: {...}` is a documented shape, not JSON: a problem, no rows.
    parsed = parse_communication(block("5.5", "{src_rank}"), "communication_matrix.json")
    assert parsed.frame.empty and len(parsed.problems) == 1


def test_the_torch_listing_with_analyse_done_is_one_complete_run(tmp_path: Path) -> None:
    listing = [line.strip() for line in block("1.1", "wan2_2_t2v_profile").splitlines()]
    build_tree(tmp_path, [(line, "." not in line.rsplit("/", 1)[-1]) for line in listing if line])
    runs = find_profile_runs(tmp_path)
    # The listing's first line is the run folder itself.
    assert [run.name for run in runs] == [listing[0]]
    assert listing[0].endswith("_ascend_pt")
    assert is_run_complete(runs[0])
    files = run_files(runs[0])
    assert sorted(files.files) == [
        "api_statistic",
        "kernels",
        "op_statistic",
        "operator_details",
        "step_trace",
        "trace",
    ]
    assert files.files["kernels"][0].name == "kernel_details.csv"


def test_the_torch_listing_with_an_inner_prof_takes_what_ascend_output_lacks(
    tmp_path: Path,
) -> None:
    build_tree(tmp_path, tree_listing_paths(block("1.1", "└── msprof_1784298")))
    runs = find_profile_runs(tmp_path)
    assert [run.name for run in runs] == ["msprof_1784298_20260114085947065_ascend_pt"]
    files = run_files(runs[0]).files
    # ASCEND_PROFILER_OUTPUT's own files win; api_statistic and task_time come from the PROF_*.
    assert files["kernels"][0].name == "kernel_details.csv"
    assert files["trace"][0].name == "trace_view.json"
    assert files["api_statistic"][0].name == "api_statistic_20260114085954.csv"
    assert files["api_statistic"][0].parent.name == "mindstudio_profiler_output"
    assert files["task_time"][0].name == "task_time_20260114085954.csv"
    assert run_files(runs[0]).devices == (1,)
    # This listing has no analyse.done: the run is not (yet) complete.
    assert not is_run_complete(runs[0])


def test_the_doc_listings_hold_no_real_data_files_we_would_mistake(tmp_path: Path) -> None:
    # Empty files (the listing gives names, not contents) are problems, never exceptions.
    build_tree(tmp_path, tree_listing_paths(block("1.1", "└── msprof_1784298")))
    run = load_profile(tmp_path)
    assert run.kernels.empty and run.step_trace.empty
    assert any("kernel_details.csv: empty file" in problem for problem in run.problems)
    assert any("analyse.done" in problem for problem in run.problems)
    json.dumps(run.problems)
