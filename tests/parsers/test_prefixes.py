"""Prefixes that wrap a CANN line must not hide it (formats doc §1.2, last row)."""

from __future__ import annotations

import pytest

from tests.conftest import parse, parse_one

LINE = "[ERROR] HCCL(41005,python3):2025-09-01-10:12:00.400.101 [hccl.cc:816] [41066]wait timeout"


@pytest.mark.parametrize(
    "prefix",
    [
        "run/plog/plog-41005_20250901101010111.log:",
        "debug/plog/plog-41005_20250901101010111.log:14:",
        "[rank1]: ",
        "(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [multiproc_executor.py:596] ",
        "(RayWorkerWrapper pid=11394, ip=10.0.1.4) ",
        "[2026-03-19 15:04:57] ",
        "> ",
        "> > ",
        "(Worker pid=17096) (Worker_DP0_TP5_EP5 pid=17096) ",
    ],
)
def test_a_wrapped_cann_line_gives_the_same_header_fields(prefix: str) -> None:
    record = parse_one(prefix + LINE)
    assert (record.level, record.logger, record.pid, record.process_name, record.thread_id) == (
        "ERROR",
        "HCCL",
        41005,
        "python3",
        41066,
    )
    assert record.timestamp_us == 1756721520400101
    assert record.original == prefix + LINE


def test_rank_prefix_sets_the_rank() -> None:
    assert parse_one("[rank3]: " + LINE).rank == 3


def test_indented_lines_behind_a_prefix_continue_the_block() -> None:
    records = parse(
        "[rank0]: E90003: [PID: 9038] 2025-09-28-03:43:47.761.546 Compile operator failed\n"
        "[rank0]:         TraceBack (most recent call last):\n"
    )
    assert len(records) == 1 and records[0].error_codes == ["E90003"]


def test_vllm_prefixed_text_without_a_cann_line_is_a_vllm_record() -> None:
    record = parse(
        "[INFO] GE(1,p):2025-03-04-12:00:00.000.000 [a.cc:1]1 F:x\n"
        "ERROR 03-04 12:57:08 [engine.py:409] InnerRun: OPS function error, error code is 500002\n"
    )[1]
    assert (record.format, record.level, record.origin_file, record.runtime_codes) == (
        "vllm",
        "ERROR",
        "engine.py",
        [500002],
    )
    assert record.timestamp_us == 1741093028000000  # year from the stream: 2025
