"""What a CANN path says (formats doc §5)."""

from __future__ import annotations

import pytest

from npuwatch.parsers.paths import describe_path
from tests.conftest import utc_clock


@pytest.mark.parametrize(
    ("path", "kind", "channel", "device", "pid"),
    [
        (
            "/root/ascend/log/debug/plog/plog-2111667_20251024111652406.log",
            "plog",
            "debug",
            None,
            2111667,
        ),
        (
            "/root/ascend/log/run/device-3/device-2849330_20251024153927364.log",
            "device",
            "run",
            3,
            2849330,
        ),
        (
            "/var/log/npu/slog/debug/device-os/device-os_20250508023354002.log",
            "device-os",
            "debug",
            None,
            None,
        ),
        ("/var/log/npu/slog/run/event/event_20250508023354102.log", "event", "run", None, None),
        (
            "/var/log/npu/slog/debug/device-0/device-0_20250508023354201.log",
            "firmware",
            "debug",
            0,
            None,
        ),
        (
            "/var/log/npu/slog/run/device-app-98209/device-app-98209_20250508071308746.log",
            "device-app",
            "run",
            None,
            98209,
        ),
        ("/var/log/npu/slog/slogd/slogdlog", "slogd", None, None, None),
        (
            "dfx/log/device/dev-os-0/firmware/debug/device-0/device-0_20250508095626087.log",
            "firmware",
            "debug",
            0,
            None,
        ),
        ("slog/plog/plog_20201224011056159.log", "plog", None, None, None),
        ("slog/host-0/host-0_20201224011056159.log", "plog", None, None, None),
        ("dfx/log/host/driver/host_kernel.log", "other", None, None, None),
    ],
)
def test_path_gives_kind_channel_device_and_pid(
    path: str, kind: str, channel: str | None, device: int | None, pid: int | None
) -> None:
    info = describe_path(path, utc_clock())
    assert (info.kind, info.channel, info.device, info.pid) == (kind, channel, device, pid)


def test_file_name_gives_the_creation_time() -> None:
    info = describe_path("debug/plog/plog-1_20251024111652406.log", utc_clock())
    assert info.created_us == 1761304612406000  # 2025-10-24T11:16:52.406Z
