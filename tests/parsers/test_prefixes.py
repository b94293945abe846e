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
        "    ",
        "\t",
        "  > ",
        "    [rank1]: ",
        "[rank1]:     ",
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


PLOG = (
    "[ERROR] RUNTIME(52001,python3):2025-10-02-08:14:03.120.551 [stream.cc:1402]52011 Sync:failed"
)


def test_an_indented_cann_header_after_a_record_starts_a_record_of_its_own() -> None:
    records = parse("    " + PLOG + "\n    " + LINE + "\n")
    assert [(r.logger, r.line_count) for r in records] == [("RUNTIME", 1), ("HCCL", 1)]
    assert records[1].original == "    " + LINE
    assert records[1].message == "wait timeout"


@pytest.mark.parametrize(
    "header",
    [
        "[ERROR]HCCL(835695,all_reduce_test):2025-10-02-08:14:03.049.385[task_exception_handler.cc:610]x",
        "ERROR] RUNTIME(27271,ker_DP7_EP7) :2025-10-02-08:14:03.049.385 [a.cc:1]27271 F:x",
        "[ERROR] DRV(28499, hccp_service.bin):2025-10-02 08:14:03.049.385 [a.c:1]x",
        "[EXCEPTION] ME(170414,fffe397fa1e0,python):2021-09-13-15:29:07.465.388 [a.cc:62] F] x",
    ],
)
def test_an_indented_header_with_a_known_anomaly_starts_a_record(header: str) -> None:
    records = parse(PLOG + "\n  " + header + "\n")
    assert len(records) == 2 and records[1].original == "  " + header
    assert records[1].format in {"slog", "mindspore"}


@pytest.mark.parametrize(
    "continuation",
    [
        "        TraceBack (most recent call last):",
        "       GELib::InnerInitialize failed.[FUNC:Initialize][FILE:gelib.cc][LINE:177]",
        '  File "train.py", line 88, in <module>',
        '    "ge.exec.deviceId": "3",',
        " ***********ub end*************",
        "    <exception_print>HWS_REG_GLB_CTRL0=0xff1f0037012a",
        "    EI0006: [PID: 52001] 2025-10-02-08:14:03.121.002 Getting socket times out.",
        "    [ERROR] 2025-10-02-08:14:03 (PID:52001, Device:3, RankID:3) ERR02200 DIST call failed.",
        "    [INFO]  acl init success",
        "    [ERROR] RUNTIME(52001,python3):2025-10-02-08:14 a header cut short",
        "    [rank3]:         TraceBack (most recent call last):",
        "    ",
    ],
)
def test_an_indented_line_without_a_complete_header_continues_the_record(
    continuation: str,
) -> None:
    (record,) = parse(PLOG + "\n" + continuation + "\n")
    assert record.original == PLOG + "\n" + continuation and record.line_count == 2
