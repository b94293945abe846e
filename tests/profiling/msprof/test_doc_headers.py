"""Every header the msprof formats doc gives for a table we read, as a header-only file.

Each header is taken from the doc at test time (code blocks, Python lists, the tables of §2.2
and §4) and must parse with no problem into the canonical columns written below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from npuwatch.profiling.msprof.kernels import parse_kernels
from npuwatch.profiling.msprof.memory import parse_npu_mem
from npuwatch.profiling.msprof.operator_details import parse_operator_details
from npuwatch.profiling.msprof.statistics import (
    parse_api_statistic,
    parse_communication_statistic,
    parse_op_statistic,
)
from npuwatch.profiling.msprof.steps import parse_msprof_step_trace, parse_step_trace_time
from npuwatch.profiling.msprof.tables import ParsedTable
from npuwatch.profiling.msprof.task_time import parse_task_time
from tests.profiling.msprof.msprof_doc import (
    backticked_headers,
    block,
    blocks,
    python_list,
    section_lines,
)

Parser = Callable[[str, str], ParsedTable]
KERNEL_BASE = {"op_name", "duration_us"}
TORCH_RENAMES = {"Task Start Time(us)": "'Start Time(us)'"}


def _table_headers(section: str, starting: str) -> list[str]:
    return [
        header
        for line in section_lines(section)
        for header in backticked_headers(line)
        if header.startswith(starting)
    ]


def _cpp_op_summary_header() -> str:
    """§2.1: the C++ BASE_HEADER and ADDITIONAL_TENSOR_HEADER, with the constant values the doc
    spells out (the ones it elides with … are left out)."""
    constants = dict(re.findall(r'`([A-Z0-9_]+) = "([^"]+)"`', "\n".join(section_lines("2.1"))))
    names = re.findall(r"\b[A-Z][A-Z0-9_]+\b", block("2.1", "const std::vector").split("{", 1)[1])
    return ",".join(constants[name] for name in names if name in constants)


def _python_exporter_header() -> str:
    return "".join(re.findall(r"'([^']*)'", block("2.1", "'Model Name")))


def _torch_list(section: str, starts: str, name: str, replacements: dict[str, str]) -> str:
    return ",".join(python_list(block(section, starts), name, replacements))


def _step_titles(index: int) -> str:
    titles = re.findall(r"title = (\[.*?\])", block("5.3", "# older"), re.DOTALL)
    return ",".join(python_list(f"title = {titles[index]}", "title"))


CASES: dict[str, tuple[Callable[[], str], Parser, set[str]]] = {
    "2.1 C++ op_summary (Block Num)": (
        _cpp_op_summary_header,
        parse_kernels,
        KERNEL_BASE
        | {"device_id", "start_us", "wait_us", "block_num", "mix_block_num", "task_type"},
    ),
    "2.1 Python exporter op_summary": (
        _python_exporter_header,
        parse_kernels,
        KERNEL_BASE | {"model_name", "infer_id", "op_state", "block_num", "hf32_eligible"},
    ),
    "2.2 oldest op_summary (Task Start Time, Block Dim)": (
        lambda: _table_headers("2.2", "Model Name")[0],
        parse_kernels,
        KERNEL_BASE | {"start_us", "block_num", "mix_block_num"},
    ),
    "2.2 2022 op_summary (OP State, HF32)": (
        lambda: _table_headers("2.2", "Model Name")[1],
        parse_kernels,
        KERNEL_BASE | {"op_state", "start_us", "block_num", "hf32_eligible"},
    ),
    "2.2 oldest step_trace (FP Start without unit)": (
        lambda: _table_headers("2.2", "Iteration ID")[0],
        parse_msprof_step_trace,
        {"step", "fp_start_us", "bp_end_us", "iteration_end_us", "iteration_us"},
    ),
    "2.2 C++ unit test op_summary (Block Dim, Device_id)": (
        lambda: block("2.2", "Device_id,Model ID"),
        parse_kernels,
        KERNEL_BASE | {"device_id", "block_num", "input_shapes", "output_formats"},
    ),
    "2.2 ST PipeUtilization op_summary": (
        lambda: block("2.2", "Model ID,Task ID"),
        parse_kernels,
        KERNEL_BASE | {"mix_block_num", "context_id", "aic_mac_ratio", "cube_utilization_pct"},
    ),
    "3 op_statistic whole network": (
        lambda: block("3", "Model Name,OP Type"),
        parse_op_statistic,
        {"model_name", "op_type", "task_type", "count", "total_us", "ratio_pct"},
    ),
    "3 op_statistic all data": (
        lambda: block("3", "OP Type,Core Type"),
        parse_op_statistic,
        {"op_type", "task_type", "count", "total_us", "min_us", "avg_us", "max_us"},
    ),
    "4 task_time (export config)": (
        lambda: _table_headers("4", "Time(%)")[0],
        parse_task_time,
        {"op_name", "task_type", "api_name", "total_us", "count", "waiting_us", "task_id"},
    ),
    "4 task_time (documentation)": (
        lambda: _table_headers("4", "Device_id,kernel_name")[0],
        parse_task_time,
        {"device_id", "op_name", "task_type", "duration_us", "start_us", "end_us", "stream_id"},
    ),
    "4 api_statistic": (
        lambda: _table_headers("4", "Level,API Name")[0],
        parse_api_statistic,
        {"level", "api_name", "total_us", "count", "avg_us", "variance"},
    ),
    "4 step_trace": (
        lambda: _table_headers("4", "Iteration ID,FP Start(us)")[0],
        parse_msprof_step_trace,
        {"step", "fp_start_us", "iteration_us", "data_aug_bound_us", "step_us"},
    ),
    "4 communication_statistic": (
        lambda: _table_headers("4", "OP Type,Count")[0],
        parse_communication_statistic,
        {"op_type", "count", "total_us", "ratio_pct"},
    ),
    "4 npu_mem": (
        lambda: _table_headers("4", "event,ddr(KB)")[0],
        parse_npu_mem,
        {"event", "ddr_kb", "hbm_kb", "memory_kb", "timestamp_us"},
    ),
    "5.1 kernel_details (current, Block Num)": (
        lambda: _torch_list(
            "5.1", 'OP_SUMMARY_SHOW_HEADERS = ["Device_id"', "OP_SUMMARY_KERNEL_BASE_HEADERS", {}
        ),
        parse_kernels,
        KERNEL_BASE | {"device_id", "op_type", "task_type", "start_us", "wait_us", "block_num"},
    ),
    "5.1 op_summary show headers (current)": (
        lambda: _torch_list(
            "5.1",
            'OP_SUMMARY_SHOW_HEADERS = ["Device_id"',
            "OP_SUMMARY_SHOW_HEADERS",
            {"TASK_START_TIME": '"Task Start Time(us)"'},
        ),
        parse_kernels,
        KERNEL_BASE | {"device_id", "start_us", "block_num"},
    ),
    "5.1 kernel_details (2023, Block Dim)": (
        lambda: _torch_list(
            "5.1", 'OP_SUMMARY_SHOW_HEADERS = ["Op Name"', "OP_SUMMARY_KERNEL_BASE_HEADERS", {}
        ),
        parse_kernels,
        KERNEL_BASE | {"op_type", "task_type", "start_us", "wait_us", "block_num"},
    ),
    "5.2 operator_details": (
        lambda: _torch_list("5.2", "OPERATOR_HEADERS", "OPERATOR_HEADERS", {}),
        parse_operator_details,
        {"op_name", "input_shapes", "call_stack", "host_self_us", "device_total_aicore_us"},
    ),
    "5.3 step_trace_time (older)": (
        lambda: _step_titles(0),
        parse_step_trace_time,
        {"step", "computing_us", "communication_not_overlapped_us", "free_us", "step_us"},
    ),
    "5.3 step_trace_time (with Preparing)": (
        lambda: _step_titles(1),
        parse_step_trace_time,
        {"step", "computing_us", "bubble_us", "preparing_us", "step_us"},
    ),
    "5.3 step_trace_time (current, Device_id first)": (
        lambda: _step_titles(2),
        parse_step_trace_time,
        {"device_id", "step", "computing_us", "preparing_us", "step_us"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_header_of_the_doc_parses_into_canonical_columns(case: str) -> None:
    header_of, parser, expected = CASES[case]
    header = header_of().strip().splitlines()[0]
    parsed = parser(header + "\n", "header-only.csv")
    assert parsed.problems == []
    assert parsed.frame.empty
    assert expected <= set(parsed.frame.columns), sorted(expected - set(parsed.frame.columns))
    # Every cell of the header found a canonical or snake_case column: no spaces, no units
    # in parentheses.
    assert all(re.fullmatch(r"[a-z0-9_]+", column) for column in parsed.frame.columns)


def test_the_doc_still_has_the_blocks_these_cases_read() -> None:
    for section in ("2.1", "2.2", "3", "5.1", "5.2", "5.3"):
        assert blocks()[section], section
