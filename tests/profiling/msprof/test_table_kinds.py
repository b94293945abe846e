"""The parsers of the other kinds, with rows: steps, task_time, npu_mem, operator_details,
communication.json, trace events and the run metadata."""

from __future__ import annotations

import json

import pytest

from npuwatch.profiling.msprof.communication import parse_communication
from npuwatch.profiling.msprof.memory import parse_npu_mem
from npuwatch.profiling.msprof.metadata import parse_run_metadata
from npuwatch.profiling.msprof.operator_details import parse_operator_details
from npuwatch.profiling.msprof.steps import parse_msprof_step_trace, parse_step_trace_time
from npuwatch.profiling.msprof.task_time import parse_task_time
from npuwatch.profiling.msprof.trace import device_of_trace, parse_trace

STEP_HEADER = (
    "Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
    "Bubble,Communication(Not Overlapped and Exclude Receive),Preparing"
)


def test_a_step_is_computing_plus_communication_not_overlapped_plus_free() -> None:
    text = f"{STEP_HEADER}\n3,7,100.5,20,5,25,10,130.5,0,20,1\n"
    parsed = parse_step_trace_time(text, "step_trace_time.csv")
    assert parsed.problems == []
    row = parsed.frame.iloc[0]
    assert (row["device_id"], row["step"]) == (3, 7)
    assert row["step_us"] == 130.5
    assert row["overlapped_us"] == 5 and row["preparing_us"] == 1


def test_a_profile_without_step_markers_has_one_row_with_no_step() -> None:
    text = "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n"
    parsed = parse_step_trace_time(text + ",100,0,0,0,50\n", "step_trace_time.csv")
    assert parsed.frame["step"].isna().all()
    assert parsed.frame["step_us"].tolist() == [150]


def test_an_msprof_iteration_is_a_step_of_its_iteration_time() -> None:
    header = "Device_id,Iteration ID,FP Start(us),BP End(us),Iteration End(us),Iteration Time(us)"
    parsed = parse_msprof_step_trace(f"{header}\n0,2,10,20,30,4539.75\n", "step_trace_1.csv")
    assert parsed.frame[["step", "iteration_us", "step_us"]].iloc[0].tolist() == [
        2,
        4539.75,
        4539.75,
    ]


def test_task_time_statistic_rows_fill_totals_and_task_rows_fill_durations() -> None:
    statistic = "Time(%),Time(us),Count,Avg(us),Min(us),Max(us),Waiting(us),Running(us),"
    statistic += "Pending(us),Type,API,Task ID,Op Name,Stream ID\n"
    statistic += "61.2,1200.5,10,120.05,100,150,3,1197.5,0,AI_CORE,aclnnMatmul,12,MatMul_1,2\n"
    rows = parse_task_time(statistic, "task_time_1.csv").frame.iloc[0]
    assert (rows["op_name"], rows["task_type"], rows["total_us"], rows["count"]) == (
        "MatMul_1",
        "AI_CORE",
        1200.5,
        10,
    )
    tasks = "Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),"
    tasks += "task_stop(us)\n0,Add_3,AI_VECTOR_CORE,2,44,12.5,1000.0,1012.5\n"
    task = parse_task_time(tasks, "task_time_2.csv").frame.iloc[0]
    assert (task["op_name"], task["duration_us"], task["start_us"], task["end_us"]) == (
        "Add_3",
        12.5,
        1000.0,
        1012.5,
    )


def test_npu_mem_samples_are_kilobytes_at_a_time() -> None:
    text = "Device_id,event,ddr(KB),hbm(KB),memory(KB),timestamp(us)\n0,app,0,4096,4096,17.5\n"
    row = parse_npu_mem(text, "npu_mem_1.csv").frame.iloc[0]
    assert (row["event"], row["hbm_kb"], row["timestamp_us"]) == ("app", 4096, 17.5)


def test_operator_details_give_host_and_device_durations() -> None:
    text = "Name,Input Shapes,Call Stack,Host Self Duration(us),Device Total Duration(us)\n"
    text += 'aten::matmul,"""8,16;16,4""",train.py(3): f,12.5,300\n'
    row = parse_operator_details(text, "operator_details.csv").frame.iloc[0]
    assert (row["op_name"], row["input_shapes"], row["host_self_us"], row["device_total_us"]) == (
        "aten::matmul",
        "8,16;16,4",
        12.5,
        300,
    )


def _operation(elapse_ms: float) -> dict[str, object]:
    return {
        "Communication Time Info": {
            "Start Timestamp(us)": 1000.5,
            "Elapse Time(ms)": elapse_ms,
            "Transit Time(ms)": 1.5,
            "Wait Time(ms)": 0.25,
            "Synchronization Time(ms)": 0.125,
            "Idle Time(ms)": 0.125,
        },
        "Communication Bandwidth Info": {
            "HCCS": {"Transit Size(MB)": 64, "Transit Time(ms)": 1.5, "Bandwidth(GB/s)": 42.6}
        },
    }


def test_communication_json_is_one_row_per_operation_in_microseconds() -> None:
    document = {
        "step3": {
            "collective": {
                "hcom_allReduce__1_0_1@123": _operation(2.0),
                "Total Op Info": _operation(2.0),
            },
            "p2p": {"hcom_send__2_0@456": _operation(0.5)},
        }
    }
    parsed = parse_communication(json.dumps(document), "communication.json")
    assert parsed.problems == []
    frame = parsed.frame
    assert frame["op_name"].tolist() == ["hcom_allReduce__1_0_1", "hcom_send__2_0"]
    assert frame["kind"].tolist() == ["collective", "p2p"]
    assert frame["group"].tolist() == ["123", "456"]
    assert frame["step"].tolist() == [3, 3]
    assert frame["elapse_us"].tolist() == [2000.0, 500.0]
    assert frame["transit_us"][0] == 1500.0
    assert frame["hccs_transit_size_mb"][0] == 64
    assert frame["hccs_bandwidth_gb_per_s"][0] == 42.6


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ("{}", "no communication operations"),
        ('{"step1": 5}', "'step1' is not an object; skipped"),
    ],
)
def test_communication_json_that_says_nothing_is_a_problem(content: str, problem: str) -> None:
    parsed = parse_communication(content, "communication.json")
    assert parsed.frame.empty
    assert len(parsed.problems) == 1 and problem in parsed.problems[0]


def test_a_trace_event_without_a_numeric_ts_is_skipped_and_reported() -> None:
    events = [
        {"ph": "M", "name": "process_labels", "pid": 9, "tid": 0, "args": {"labels": "NPU 5"}},
        {"ph": "X", "name": "ok", "pid": 9, "tid": 1, "ts": " 12.5\t", "dur": 2},
        {"ph": "X", "name": "bad", "pid": 9, "tid": 1, "ts": "soon", "dur": 2},
        {"ph": "s", "name": "flow", "pid": 9, "tid": 1, "ts": "13"},
    ]
    parsed = parse_trace(json.dumps({"traceEvents": events}), "msprof_1.json")
    assert parsed.frame["name"].tolist() == ["ok"]
    assert parsed.frame["start_us"][0] == 12.5
    assert parsed.problems == ["msprof_1.json: event 3 ('bad'): ts or dur is not a number; skipped"]
    assert device_of_trace(parsed.frame) == 5


@pytest.mark.parametrize("content", ["", "{", '{"events": []}', "7"])
def test_a_trace_that_is_not_a_list_of_events_is_a_problem(content: str) -> None:
    parsed = parse_trace(content, "trace_view.json")
    assert parsed.frame.empty and len(parsed.problems) == 1


def test_metadata_versions_and_rank_are_found_at_any_depth_and_spelling() -> None:
    metadata = parse_run_metadata(
        {
            "run/profiler_info_3.json": b'{"config": {}, "torch_npu_version": "2.5.1"}',
            "run/profiler_metadata.json": b'{"CANN": {"Version": "8.1.RC1"}, "rank_id": 7}',
        }
    )
    assert (metadata.rank, metadata.cann_version, metadata.torch_npu_version) == (
        3,
        "8.1.RC1",
        "2.5.1",
    )
    assert metadata.problems == ()


def test_metadata_rank_comes_from_the_document_when_the_name_has_none() -> None:
    metadata = parse_run_metadata(
        {"profiler_info.json": b'{"distributed_args": {"rank": 2, "world_size": 8}}'}
    )
    assert metadata.rank == 2


def test_a_negative_rank_means_not_distributed_and_bad_json_is_a_problem() -> None:
    metadata = parse_run_metadata(
        {"profiler_info.json": b'{"rank_id": -1}', "profiler_metadata.json": b"{cut"}
    )
    assert metadata.rank is None
    assert len(metadata.problems) == 1
    assert metadata.problems[0].startswith("profiler_metadata.json: not valid JSON")
