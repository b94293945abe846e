"""msOpProf's trace.json (on board and simulator) and visualize_data.bin read and summed: block
spans, HCCL tasks per link, pipe busy time, msOpProf's advice, and damaged files as problems."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from fixtures.debug_tools.make_opprof import MEMORY_BOUND_ADVICE, json_block, visualize_block

from npuwatch.profiling.opprof.read import read_opprof_run
from npuwatch.profiling.opprof.read_trace import parse_trace, read_trace
from npuwatch.profiling.opprof.read_visualize import read_visualize
from tests.conftest import FIXTURES

OPPROF = FIXTURES / "debug_tools" / "opprof"
MC2 = OPPROF / "OPPROF_20260605170714_RYQFPTCBYWBFCNBI"
SIMULATOR = OPPROF / "OPPROF_20250302100000_SIMULATORRUNABCD" / "simulator"
MEMORY_BOUND = OPPROF / "OPPROF_20250302093000_MEMBOUNDVECTORAB"
DAMAGED = OPPROF / "OPPROF_20250302101500_DAMAGEDCSVFILESX"


def _mc2(device: int) -> Path:
    return MC2 / f"device{device}" / "allgather_matmul_mix_aic" / "0" / "trace.json"


def test_an_mc2_trace_has_its_block_marks_spans_and_hccl_tasks_per_link() -> None:
    problems: list[str] = []
    trace = read_trace(_mc2(0), problems)
    assert trace is not None and problems == []
    assert trace.schema_version == 1 and trace.events == 17 and trace.phases == {"M": 6, "X": 11}
    spans = [(b.block, b.lane, round(b.span_us, 3)) for b in trace.blocks]
    assert spans == [
        ("AIC BLOCK0", "core0.cubecore0", 28.4),
        ("AIV BLOCK0", "core0.veccore0", 27.9),
        ("AIV BLOCK1", "core0.veccore1", 27.62),
    ]
    assert trace.core_span_us == pytest.approx(28.92)
    assert [task.task_type for task in trace.comm_tasks] == [
        "Notify_Record", "Notify_Wait", "Memcpy", "Memcpy",
    ]  # fmt: skip
    record = trace.comm_tasks[0]
    assert (record.plane_id, record.notify_id, record.stream_id, record.task_id) == (
        "0", "3", "7", "40",
    )  # fmt: skip
    assert (record.src_rank, record.dst_rank, record.size_bytes) == (0, 1, 0.0)
    assert record.estimated_us == pytest.approx(0.372) and record.data_type == "INVALID_TYPE"
    hccs, on_chip = trace.links()
    assert (hccs.link_type, hccs.transport_type, hccs.tasks) == ("HCCS", "SDMA", 3)
    assert hccs.size_bytes == 4194304 and hccs.time_us == pytest.approx(25.8)
    assert hccs.gb_s == pytest.approx(4194304 / 23.3 / 1e3)  # notifies move no bytes
    assert (on_chip.link_type, on_chip.tasks, on_chip.size_bytes) == ("ON_CHIP", 1, 4194304)
    assert trace.gaps[0].lane == "HCCL/stream7" and trace.gaps[0].gap_us == pytest.approx(4.3)


def test_args_written_as_text_and_timed_blocks_read_the_same() -> None:
    problems: list[str] = []
    trace = read_trace(_mc2(1), problems)
    assert trace is not None and problems == []
    assert trace.events == 15 and len(trace.comm_tasks) == 5
    assert [round(block.span_us, 3) for block in trace.blocks] == [40.0, 31.2, 39.6]
    rdma = trace.comm_tasks[-1]
    assert (rdma.src_rank, rdma.dst_rank, rdma.size_bytes) == (1, 0, 1048576.0)
    assert rdma.bandwidth_gb_s == pytest.approx(49.932)
    assert [(link.link_type, link.transport_type) for link in trace.links()] == [
        ("HCCS", "SDMA"), ("ON_CHIP", "SDMA"), ("ROCE", "RDMA"),
    ]  # fmt: skip


def test_the_simulator_trace_sums_pipes_flags_and_flows_per_core() -> None:
    problems: list[str] = []
    trace = read_trace(SIMULATOR / "trace.json", problems)
    assert trace is not None and problems == []
    assert trace.schema_version == 2 and trace.events == 66
    assert trace.phases == {"B": 12, "E": 12, "M": 10, "X": 20, "s": 6, "t": 6}
    busy = {(p.core, p.pipe): (p.instructions, round(p.busy_us, 3)) for p in trace.pipes}
    assert busy == {
        ("core0.veccore0", "MTE2"): (3, 4.2), ("core0.veccore0", "VECTOR"): (3, 1.8),
        ("core0.veccore0", "MTE3"): (3, 0.9), ("core1.veccore0", "MTE2"): (3, 3.78),
        ("core1.veccore0", "VECTOR"): (3, 1.62), ("core1.veccore0", "MTE3"): (3, 0.9),
    }  # fmt: skip
    assert [(f.name, f.pairs, round(f.total_us, 3)) for f in trace.flags] == [
        ("SET_FLAG", 6, 0.3), ("WAIT_FLAG", 6, 8.88),
    ]  # fmt: skip
    assert trace.flows == {"MTE2ToVECTOR": 6} and trace.blocks == () and trace.comm_tasks == ()
    assert trace.gaps[0].gap_us == pytest.approx(1.7) and trace.gaps[0].lane.endswith("/MTE3")


def test_a_simulator_launch_keeps_the_all_core_trace_and_each_core_file() -> None:
    (launch,) = read_opprof_run(SIMULATOR.parent).launches
    assert launch.trace is not None and launch.trace.events == 66
    (core,) = launch.core_traces
    assert core.schema_version == 1 and core.events == 33
    assert {pipe.core for pipe in core.pipes} == {"core0.veccore0"}


def test_visualize_data_gives_the_basic_info_advice_trace_and_code() -> None:
    problems: list[str] = []
    data = read_visualize(MEMORY_BOUND / "visualize_data.bin", problems)
    assert data is not None and problems == [] and data.complete
    assert data.kinds() == ["OpBasicInfo", "Trace", "Code", "RoofLine"]
    assert [(block.kind, block.version) for block in data.blocks] == [
        (5, 0x5A), (2, 0x5A), (1, 0x5A), (0xD, 0x5A),
    ]  # fmt: skip
    assert all(block.size % 4 == 0 for block in data.blocks)
    basic = data.basic
    assert basic is not None and basic.advice == tuple(MEMORY_BOUND_ADVICE)
    assert (basic.name, basic.soc, basic.op_type) == (
        "add_rms_norm_custom",
        "Ascend910B2",
        "vector",
    )
    assert (basic.block_dim, basic.mix_block_dim, basic.device_id, basic.pid) == (
        4, None, 0, 2871546,
    )  # fmt: skip
    assert (basic.duration_us, basic.current_freq_mhz, basic.rated_freq_mhz) == (
        24.86, 1800.0, 1800.0,
    )  # fmt: skip
    assert basic.detail_columns[2] == "aiv_time(us)" and basic.detail_rows == 4
    (code,) = data.code
    assert code.path.endswith("op_kernel/add_rms_norm_custom.cpp") and code.lines == 9
    assert data.trace is not None and data.trace.events == 17
    assert [round(block.span_us, 3) for block in data.trace.blocks] == [
        21.402, 21.352, 21.469, 21.395,
    ]  # fmt: skip


def test_a_header_claiming_more_than_the_file_ends_the_read_without_allocating() -> None:
    problems: list[str] = []
    data = read_visualize(DAMAGED / "visualize_data.bin", problems)
    assert data is not None and not data.complete
    assert data.kinds() == ["OpBasicInfo"] and data.basic is not None
    assert data.basic.name == "softmax_custom" and data.basic.advice == ()
    assert problems == [
        f"{DAMAGED}/visualize_data.bin: block 2 at byte 84 (Trace): contentSize 1099511627776 "
        "exceeds the 16 bytes left in the file; rest of the file skipped"
    ]


def test_a_trace_cut_short_keeps_its_whole_events() -> None:
    problems: list[str] = []
    trace = read_trace(DAMAGED / "trace.json", problems)
    assert trace is not None and not trace.complete and trace.events == 3
    assert trace.schema_version == 1
    assert [block.block for block in trace.blocks] == ["AIV BLOCK0"]
    assert problems == [
        f"{DAMAGED}/trace.json:5: not whole JSON (Unterminated string starting at, column 57); "
        "read the 3 events before it",
        f"{DAMAGED}/trace.json: AIV BLOCK1 on core1.veccore0: START without its END; "
        "block not counted",
    ]


def test_unknown_and_malformed_events_are_counted_problems() -> None:
    events = [
        {"ph": "Q", "name": "odd"}, {"ph": "Q"}, "text", {"ph": "X", "name": "VADD"},
        {"ph": "E", "id": "c_9", "ts": 1.0}, {"ph": "B", "name": "SET_FLAG", "id": "c_1", "ts": 2},
        {"ph": "X", "name": "VADD", "pid": "c", "tid": "VECTOR", "ts": "1.5", "dur": "0.5"},
    ]  # fmt: skip
    problems: list[str] = []
    trace = parse_trace(json.dumps(events), "t.json", problems)  # a bare array is a trace too
    assert trace is not None and trace.events == 7
    assert [(p.pipe, p.instructions, p.busy_us) for p in trace.pipes] == [("VECTOR", 1, 0.5)]
    assert problems == [
        "t.json: event 0: unknown ph 'Q'; skipped (2 such events)",
        "t.json: event 2: not a JSON object; skipped",
        "t.json: event 3: X event without a number ts and dur; skipped",
        "t.json: event 4: E event without its B; skipped",
        "t.json: 1 B events without their E; not counted",
    ]


def test_what_is_no_trace_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    problems: list[str] = []
    assert parse_trace('{"traceEvents": 3}', "a.json", problems) is None
    assert parse_trace("", "b.json", problems) is not None  # empty: no events, cut short
    assert read_trace(tmp_path / "missing.json", problems) is None
    assert problems[0] == "a.json: no traceEvents list; not a trace"
    assert problems[1].startswith("b.json:1: not whole JSON (Expecting value")
    assert problems[2].startswith(f"{tmp_path}/missing.json: cannot read (")


def test_damaged_visualize_blocks_are_problems(tmp_path: Path) -> None:
    path = tmp_path / "visualize_data.bin"
    odd_version = struct.pack("<QBBBB", 4, 0xD, 0, 0x33, 0x5A) + b"{}\0\0"
    path.write_bytes(
        visualize_block(5, b"{not json")
        + json_block(0xB, [])
        + odd_version
        + visualize_block(1, b"int main() {}\n", "/src/a.cpp")
        + b"\x05\x00"
    )
    problems: list[str] = []
    data = read_visualize(path, problems)
    assert data is not None and not data.complete and data.basic is None
    assert data.kinds() == ["OpBasicInfo", "type 11", "RoofLine", "Code"]
    assert data.code[0].path == "/src/a.cpp" and data.code[0].lines == 1
    assert problems == [
        f"{path}: block 1 at byte 0 (OpBasicInfo): not JSON (Expecting property name enclosed "
        "in double quotes); skipped",
        f"{path}: block 2 at byte 24: unknown block type 11; skipped",
        f"{path}: block 3 at byte 40 (RoofLine): version 0x33, not 0x5a; read anyway",
        f"{path}: block 5 at byte {path.stat().st_size - 2}: header cut short (2 of 12 bytes)",
    ]
