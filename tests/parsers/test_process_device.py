"""The device a process names at communicator init, on its later records that name none."""

from __future__ import annotations

from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone

UTC = LocalClock(resolve_timezone("UTC"))
HEAD = "[{level}] {module}({pid},python3):2025-09-14-09:3{minute}:00.120.000 [x.cc:1][{pid}]"


def line(level: str, module: str, pid: int, minute: int, text: str) -> str:
    return HEAD.format(level=level, module=module, pid=pid, minute=minute) + text + "\n"


def devices(text: str, path: str = "/r/debug/plog/plog-3306_20250914093000120.log") -> list:
    records = parse_bytes(text.encode(), UTC, path=path)
    return [(r.level, r.pid, r.to_document()["ascend"].get("device")) for r in records]


def test_the_errors_after_the_identity_line_carry_its_device() -> None:
    text = (
        line("ERROR", "RUNTIME", 3306, 0, "before init: no device known yet")
        + line("INFO", "HCCL", 3306, 1, "Entry-HcclCommInitRootInfo:ranks[8], deviceLogicId[3]")
        + line("ERROR", "HCCL", 3306, 2, "notify wait timeout")
        + line("ERROR", "RUNTIME", 4000, 3, "a line of another pid in the file")
    )
    # (a line of another pid in a process's plog is the file owner's: CORRELATION.md §5.4)
    assert devices(text) == [
        ("ERROR", 3306, None),
        ("INFO", 3306, None),
        ("ERROR", 3306, 3),
        ("ERROR", 4000, 3),
    ]


def test_in_a_file_of_several_processes_each_pid_keeps_its_own() -> None:
    text = (
        line("INFO", "HCCL", 3306, 1, "init deviceLogicId[3]")
        + line("INFO", "HCCL", 4000, 1, "init deviceLogicId[5]")
        + line("ERROR", "HCCL", 4000, 2, "failed")
        + line("ERROR", "HCCL", 3306, 2, "failed")
        + line("ERROR", "HCCL", 5000, 2, "a pid that named none")
    )
    found = devices(text, "/r/train/console.log")
    assert [device for level, _, device in found if level == "ERROR"] == [5, 3, None]


def test_no_device_yet_is_not_a_device() -> None:
    text = line("INFO", "HCCL", 3306, 1, "SetupAgent logicDevId[-1]") + line(
        "ERROR", "HCCL", 3306, 2, "failed"
    )
    assert [device for *_, device in devices(text)] == [None, None]


def test_a_device_log_keeps_the_device_of_its_folder() -> None:
    text = line("INFO", "HCCL", 3306, 1, "init deviceLogicId[3]") + line(
        "ERROR", "HCCL", 3306, 2, "failed"
    )
    path = "/r/debug/device-1/device-3306_20250914093000120.log"
    assert [device for *_, device in devices(text, path)] == [1, 1]
