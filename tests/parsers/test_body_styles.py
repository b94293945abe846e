"""Body styles B1–B19 (formats doc §1.3): thread, origin, function, sub-module and tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from tests.conftest import parse_one, real_log_files

HEAD = "[INFO] MOD(5120,python3):2025-06-02-14:20:11.301.004 "
FIELDS = ("thread_id", "origin_file", "origin_line", "function", "submodule", "tags", "message")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "[task_info.cc:1170]5188 PrintErrorInfo:[EXEC][EXEC]Task failed",
            (5188, "task_info.cc", 1170, "PrintErrorInfo", None, ["EXEC", "EXEC"], "Task failed"),
            id="B1",
        ),
        pytest.param(
            "[runtime.cc:5477] 5120 GetVisibleDevices: not set",
            (5120, "runtime.cc", 5477, "GetVisibleDevices", None, None, "not set"),
            id="B2",
        ),
        pytest.param(
            "[op_tiling_manager.cc:102][EVENT]5230 ~FuncPerfScope:[GEPERFTRACE] cost",
            (
                5230,
                "op_tiling_manager.cc",
                102,
                "~FuncPerfScope",
                None,
                ["EVENT", "GEPERFTRACE"],
                "cost",
            ),
            id="B3",
        ),
        pytest.param(
            "[transport_manager.cc:870] [5231][InitChannelStage][RunFailed]Transport init error",
            (
                5231,
                "transport_manager.cc",
                870,
                None,
                None,
                ["InitChannelStage", "RunFailed"],
                "Transport init error",
            ),
            id="B4",
        ),
        pytest.param(
            "[hcom.cc:264][hccl-5120-0-1717300000-hccl_world_group][2]hcom destroy",
            (
                None,
                "hcom.cc",
                264,
                None,
                None,
                ["hccl-5120-0-1717300000-hccl_world_group"],
                "hcom destroy",
            ),
            id="B5",
        ),
        pytest.param(
            "[process_mode_manager.cpp:74][Open][tid:5120] [ProcessModeManager] enter",
            (5120, "process_mode_manager.cpp", 74, "Open", None, ["ProcessModeManager"], "enter"),
            id="B6",
        ),
        pytest.param(
            "[dvpp_engine.cc:31][ENGINE][Initialize:31][tid:5120]dvpp start",
            (5120, "dvpp_engine.cc", 31, "Initialize", "ENGINE", None, "dvpp start"),
            id="B6 engine",
        ),
        pytest.param(
            "[log.cpp:148][TsdEventClient] shutdown,[tsd_event_client.cpp:137:TsdWait]4417",
            (4417, "tsd_event_client.cpp", 137, "TsdWait", None, ["TsdEventClient"], "shutdown"),
            id="B7",
        ),
        pytest.param(
            "[hdc_api.cpp:647][tid:4425]>>> connect succ",
            (4425, "hdc_api.cpp", 647, None, None, None, "connect succ"),
            id="B8",
        ),
        pytest.param(
            "[engine_mgr.cpp:82] >>> (tid:4417) Initialized module",
            (4417, "engine_mgr.cpp", 82, None, None, None, "Initialized module"),
            id="B9",
        ),
        pytest.param(
            "[trace_recorder.c:121](tid:5120) use root path",
            (5120, "trace_recorder.c", 121, None, None, None, "use root path"),
            id="B10",
        ),
        pytest.param(
            "[ascend][curpid: 5120, 5141][drv][devmm][halMemCreate 3073]<errno:12, 6> failed",
            (5141, None, None, "halMemCreate", "devmm", None, "<errno:12, 6> failed"),
            id="B11",
        ),
        pytest.param(
            "[dsmi_common.c:410][dmp] [dsmi_get_device_info 410] get info failed",
            (None, "dsmi_common.c", 410, "dsmi_get_device_info", "dmp", None, "get info failed"),
            id="B12",
        ),
        pytest.param(
            "[rs.c:1847]tid:9012,rs_get_ip(1847) : phy_id:9 fail",
            (9012, "rs.c", 1847, "rs_get_ip", None, None, "phy_id:9 fail"),
            id="B13",
        ),
        pytest.param(
            "[klogd.c:247][40211.118220] [ascend] [ERROR] [devmm] [devmm_fault 468] <kworker/u16:2:44,44> "
            "Vm fault",
            (None, "klogd.c", 247, "devmm_fault", "devmm", None, "Vm fault"),
            id="B14",
        ),
        pytest.param(
            "3370 (dieid:0,cpuid:1) [task_sched.c:901] sched_stream: queued",
            (None, "task_sched.c", 901, "sched_stream", None, None, "queued"),
            id="B15",
        ),
        pytest.param(
            "(dieid:1) [lpm_freq.c 88] freq set",
            (None, "lpm_freq.c", 88, None, None, None, "freq set"),
            id="B16",
        ),
        pytest.param(
            "42 (device_id:5 die_id:0) [IMP] imp ready",
            (None, None, None, None, "IMP", None, "imp ready"),
            id="B17",
        ),
        pytest.param(
            "[status:START] [task_queue.cc:305]DP ready",
            (None, "task_queue.cc", 305, None, None, ["status:START"], "DP ready"),
            id="B18",
        ),
        pytest.param(
            '[fusion_manager.cc:137]5120 Initialize:"[FE_PERFORMANCE]cost"',
            (5120, "fusion_manager.cc", 137, "Initialize", None, None, '"[FE_PERFORMANCE]cost"'),
            id="B19 quoted",
        ),
        pytest.param(
            "[TF_ADAPTER] [npu_attrs.cc:812] options",
            (None, "npu_attrs.cc", 812, None, "TF_ADAPTER", None, "options"),
            id="B19 FMK",
        ),
    ],
)
def test_body_style_fields(body: str, expected: tuple[object, ...]) -> None:
    record = parse_one(HEAD + body)
    assert tuple(getattr(record, field) for field in FIELDS) == expected


def test_b5_group_rank_and_b17_device_are_read() -> None:
    assert parse_one(HEAD + "[hcom.cc:264][hccl-1-0-2-group][7]x").rank == 7
    assert parse_one(HEAD + "42 (device_id:5 die_id:0) [IMP] x").device == 5


def test_body_fields_are_derived_only_when_asked_for() -> None:
    record = parse_one(HEAD + "[runtime.cc:5477] 5120 GetVisibleDevices: not set")
    assert "message" not in vars(record)
    assert record.function == "GetVisibleDevices"
    assert vars(record)["message"] == "not set"


TREES = Path(__file__).resolve().parents[2] / "fixtures" / "trees"
EVERY_FILE = sorted(path for path in TREES.rglob("*") if path.is_file()) + real_log_files()
UTC = LocalClock(resolve_timezone("UTC"))


@pytest.mark.parametrize(
    ("body", "rank", "device"),
    [
        ("[hccl_comm.cc:88][hccl-world_group][3]link up", 3, None),
        ("12 (device_id:5 die_id:0) [IMP] queue full", None, 5),
        # The runtime's own words in the message: before, a record of device 3 that said
        # `Task run failed, device_id=3` had no device, and `grep --device 3` missed it.
        ("[stream.cc:863] 150039 StreamSynchronize: device_id=0", None, 0),
        ("[stars_engine.cc:1553]155320 Task run failed, device_id=3, stream_id=2", None, 3),
        ("[npu_driver.cc:566]1 DevMemAlloc huge page failed: deviceId=6, type=2", None, 6),
        ("[devdrv.c:628]1 transform failed. (devid=65535; ret=2)", None, None),  # not ours
        ("[x.cc:1]1 failed, device_id=65535, stream_id=2", None, None),  # no device
    ],
)
def test_rank_and_device_come_from_their_styles(
    body: str, rank: int | None, device: int | None
) -> None:
    record = parse_one(HEAD + body)
    assert (record.rank, record.device) == (rank, device)


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda path: path.name)
def test_rank_and_device_read_alone_are_what_the_whole_body_gives(path: Path) -> None:
    """Read first, rank and device skip the body parser when the body lacks their style's
    marker: on every fixture file and real excerpt, the same values as parsing the body."""
    alone = parse_bytes(path.read_bytes(), UTC, path=str(path))
    whole = parse_bytes(path.read_bytes(), UTC, path=str(path))
    for record in whole:
        record.derive_body_fields()
    assert [(r.rank, r.device) for r in alone] == [(r.rank, r.device) for r in whole]


def test_a_body_without_the_markers_is_not_parsed_for_rank_and_device() -> None:
    record = parse_one(HEAD + "[stream.cc:863] 150039 StreamSynchronize: stream_id=0")
    assert (record.rank, record.device) == (None, None)
    assert "body" in vars(record) and "function" not in vars(record)
    assert record.function == "StreamSynchronize" and record.rank is None
