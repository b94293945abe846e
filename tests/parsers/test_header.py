"""The CANN record header and its anomalies (formats doc §1.1–1.2)."""

from __future__ import annotations

import pytest

from npuwatch.records import Flag
from tests.conftest import parse_one

TS_2025 = 1741680760117305  # 2025-03-11T08:12:40.117305Z


def test_canonical_header_gives_level_module_pid_name_and_utc_time() -> None:
    record = parse_one(
        "[ERROR] RUNTIME(20417,python3):2025-03-11-08:12:40.117.305 [stream.cc:1366]20503 "
        "Synchronize:stream sync failed"
    )
    assert (record.level, record.logger, record.pid, record.process_name) == (
        "ERROR",
        "RUNTIME",
        20417,
        "python3",
    )
    assert record.timestamp_us == TS_2025
    assert record.format == "slog"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "[ERROR]HCCL(835,all_reduce_test):2025-03-11-08:12:40.117.305[task.cc:610]x",
            ("ERROR", "HCCL", 835, "all_reduce_test"),
            id="no space after the bracket",
        ),
        pytest.param(
            "[ERROR] HCCL(80812,):2025-03-11-08:12:40.117.305 [a.cc:1] [86231]x",
            ("ERROR", "HCCL", 80812, ""),
            id="empty process name",
        ),
        pytest.param(
            "[ERROR] DRV(28499, hccp_service.bin):2025-03-11-08:12:40.117.305 [a.c:1]x",
            ("ERROR", "DRV", 28499, "hccp_service.bin"),
            id="space after the comma",
        ),
        pytest.param(
            "[ERROR] RUNTIME(14163,python3):2025-03-11 08:12:40.117.305 [a.cc:1]1 F:x",
            ("ERROR", "RUNTIME", 14163, "python3"),
            id="space between date and time",
        ),
        pytest.param(
            "[INFO] IMP(-2,IMP): 2025-03-11-08:12:40.117.305 1 (device_id:0 die_id:0) [IMP] x",
            ("INFO", "IMP", -2, "IMP"),
            id="space after the colon and firmware pid -2",
        ),
        pytest.param(
            "ERR0R] RUNTIME(27271,ker_DP7_EP7) :2025-03-11-08:12:40.117.305 [a.cc:1]1 F:x",
            ("ERROR", "RUNTIME", 27271, "ker_DP7_EP7"),
            id="damaged level and space before the colon",
        ),
        pytest.param(
            "EVENT] DVPP(7924,demo):2025-03-11-08:12:40.117.305 [a.cc:79][tid:7924]x",
            ("EVENT", "DVPP", 7924, "demo"),
            id="leading bracket lost",
        ),
        pytest.param(
            "[TRACE] GE(370,python3):2025-03-11-08:12:40.117.305 [status:INIT] [ge_api.cc:200]x",
            ("TRACE", "GE", 370, "python3"),
            id="TRACE level",
        ),
        pytest.param(
            "[OPLOG] TDT(1608,None):2025-03-11-08:12:40.117.305 [log.cpp:150]x",
            ("OPLOG", "TDT", 1608, "None"),
            id="OPLOG level",
        ),
        pytest.param(
            "[INFO] TSCH(-1,null):2025-03-11-08:12:40.117.305 1 (cpuid:0) a.c:1 f: x",
            ("INFO", "TSCH", -1, "null"),
            id="firmware pid -1",
        ),
    ],
)
def test_header_anomalies_still_give_the_header_fields(
    line: str, expected: tuple[str, str, int, str]
) -> None:
    record = parse_one(line)
    assert (record.level, record.logger, record.pid, record.process_name) == expected
    assert record.timestamp_us == TS_2025


def test_a_time_that_lost_a_colon_is_still_read() -> None:
    record = parse_one("[ERROR] RUNTIME(1,p):2024-01-29-19:2856.519.792 [a.cc:1]1 F:x")
    assert record.timestamp_us == 1706556536519792  # 2024-01-29T19:28:56.519792Z


def test_device_time_before_clock_sync_is_kept_and_flagged() -> None:
    record = parse_one("[INFO] TSCH(-1,null):1970-01-01-08:00:13.777.869 1 (cpuid:0) a.c:1 f: x")
    assert record.timestamp_us == (8 * 3600 + 13) * 1_000_000 + 777_869
    assert record.flags & Flag.PRE_CLOCK_SYNC


def test_mindspore_logger_keeps_pid_name_and_hex_thread() -> None:
    record = parse_one(
        "[ERROR] DEVICE(16158,fffe34f491e0,python):2023-12-29-12:03:03.764.629 "
        "[mindspore/ccsrc/device/kernel_runtime.cc:674] TaskFailCallback] Execute failed."
    )
    assert (record.format, record.logger, record.pid, record.process_name) == (
        "mindspore",
        "DEVICE",
        16158,
        "python",
    )
    assert record.thread_id == 0xFFFE34F491E0
    assert record.function == "TaskFailCallback"
    assert record.message == "Execute failed."


def test_time_is_read_in_the_configured_zone_and_stored_as_utc() -> None:
    from zoneinfo import ZoneInfo

    from npuwatch.parsers.stream import parse_bytes
    from npuwatch.parsers.timestamps import LocalClock

    line = b"[INFO] GE(1,p):2025-03-11-16:12:40.117.305 [a.cc:1]1 F:x\n"
    shanghai = parse_bytes(line, LocalClock(ZoneInfo("Asia/Shanghai")))[0]
    assert shanghai.timestamp_us == TS_2025  # 16:12 in UTC+8 is 08:12 UTC
