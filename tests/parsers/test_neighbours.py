"""Formats found next to CANN logs (formats doc §3)."""

from __future__ import annotations

import pytest

from tests.conftest import parse, parse_one


@pytest.mark.parametrize(
    ("line", "fmt", "level", "message"),
    [
        (
            "2025-07-11 08:01:02.417[INFO] log_path_mgr.c:123: logWorkspace = /usr/slog.",
            "slogd",
            "INFO",
            "logWorkspace = /usr/slog.",
        ),
        (
            "[2025-09-03-08:15:24.371626] [ascend] [drv_pcie] [WARN] [link_check 2338] "
            "<kworker/4:1:231:231:4> PCIe link degraded.",
            "host_kernel",
            "WARNING",
            "PCIe link degraded.",
        ),
        (
            "[ 4081.843939] [ascend] [devmm] [devmm_svm_release 617] <recycle:4400,4401> released",
            "dmesg",
            None,
            "released",
        ),
        (
            "[2025-09-03-08:15:25.177575] system exception code [0xB4060006]: ModuleName [TS]",
            "blackbox",
            "ERROR",
            "system exception code [0xB4060006]: ModuleName [TS]",
        ),
        (
            "[Toolkit] [2025-09-03 08:15:26] [INFO] Install package success.",
            "install",
            "INFO",
            "Install package success.",
        ),
        (
            "[INFO]HSM:1970-01-01 00:02:11.208 sec init success.",
            "firmware",
            "INFO",
            "sec init success.",
        ),
        (
            "[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] init fail",
            "mindie",
            "ERROR",
            "init fail",
        ),
        (
            "[285] [2025-12-12 12:10:10:644] torch.distributed: [ERROR] [479] Find exception",
            "torch_distributed",
            "ERROR",
            "Find exception",
        ),
        (
            "2025-07-11 11:10:00,812 - lmdeploy - ERROR - model_agent.py:489 - Rank[5] failed.",
            "python_logging",
            "ERROR",
            "Rank[5] failed.",
        ),
        (
            "[ERROR]  acl set device 3 failed, errorCode = 507033",
            "console",
            "ERROR",
            "acl set device 3 failed, errorCode = 507033",
        ),
    ],
)
def test_neighbouring_formats(line: str, fmt: str, level: str | None, message: str) -> None:
    record = parse_one(line)
    assert (record.format, record.level, record.message) == (fmt, level, message)


def test_kernel_task_fields_give_pid_and_thread() -> None:
    record = parse_one(
        "[ 2081.843939] [ascend] [devmm] [devmm_svm_release_proc 617] "
        "<kworker/u16:2:14887,14888> Devmm release."
    )
    assert (record.process_name, record.pid, record.thread_id) == ("kworker/u16:2", 14887, 14888)


def test_syslog_lines_take_the_year_of_the_stream() -> None:
    records = parse(
        "[INFO] GE(1,p):2025-09-03-08:00:00.000.000 [a.cc:1]1 F:x\n"
        "Sep  3 08:15:22 npu-host-07 python3: (48812)slog_file.c:230: host log file num = 10.\n"
    )
    syslog = records[1]
    assert (syslog.format, syslog.pid, syslog.origin_file, syslog.origin_line) == (
        "syslog",
        48812,
        "slog_file.c",
        230,
    )
    assert syslog.timestamp_us == 1756887322000000


def test_anything_else_is_an_unparsed_record_not_an_error() -> None:
    record = parse_one("completely unknown text")
    assert record.format == "unparsed" and record.message == "completely unknown text"
