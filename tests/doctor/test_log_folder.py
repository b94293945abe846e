"""The log folder: where it is, how big, how fast it grows, how old its newest file is."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from npuwatch.doctor.host import DoctorOptions
from npuwatch.doctor.log_folder import (
    FolderSnapshot,
    log_folder_check,
    log_folder_location,
    snapshot,
    written_bytes,
)
from tests.doctor.fake_host import GIB, fake_host, write

MIB = 1 << 20
NOW = 1_760_000_000.0


def plog_tree(folder: Path) -> list[Path]:
    """A small ~/ascend/log: two plogs and a device log, at known sizes and times."""
    files = [
        write(folder / "debug/plog/plog-1234_20251024111652406.log", "x" * 1000),
        write(folder / "debug/plog/plog-1235_20251024111700001.log", "x" * 500),
        write(folder / "debug/device-0/device-1234_20251024111652500.log", "x" * 48),
    ]
    for age, path in zip((300, 30, 3600), files, strict=True):
        os.utime(path, (NOW - age, NOW - age))
    return files


def test_the_folder_is_the_option_then_process_log_path_then_work_path_then_home(
    tmp_path: Path,
) -> None:
    everything = {
        "ASCEND_PROCESS_LOG_PATH": "/p",
        "ASCEND_WORK_PATH": "/w",
        "HOME": "/home/hpc",
    }
    host = fake_host(tmp_path, everything)
    assert log_folder_location(host, Path("/given")).path == Path("/given")
    assert log_folder_location(host, None).path == Path("/p")
    del everything["ASCEND_PROCESS_LOG_PATH"]
    assert log_folder_location(fake_host(tmp_path, everything), None).path == Path("/w/log")
    del everything["ASCEND_WORK_PATH"]
    location = log_folder_location(fake_host(tmp_path, everything), None)
    assert (location.path, location.named_by) == (Path("/home/hpc/ascend/log"), "~/ascend/log")


def test_a_folder_not_created_yet_is_absent(tmp_path: Path) -> None:
    check = log_folder_check(fake_host(tmp_path), DoctorOptions(sample_seconds=0))
    assert check.status == "absent"
    assert check.detail == (
        f"no log folder at {tmp_path}/home/ascend/log yet (CANN creates it when a job first logs)"
    )


def test_a_file_where_the_folder_should_be_fails(tmp_path: Path) -> None:
    write(tmp_path / "home/ascend/log", "oops")
    check = log_folder_check(fake_host(tmp_path), DoctorOptions(sample_seconds=0))
    assert check.status == "fail"
    assert check.detail.endswith("is not a folder: CANN cannot write its logs there")


def test_size_file_count_and_the_age_of_the_newest_file_are_reported(tmp_path: Path) -> None:
    folder = tmp_path / "home/ascend/log"
    plog_tree(folder)
    slept: list[float] = []
    host = replace(fake_host(tmp_path), now=lambda: NOW, sleep=slept.append)
    check = log_folder_check(host, DoctorOptions(sample_seconds=0))
    assert check.status == "ok"
    assert slept == []
    assert check.detail == (
        f"{folder}: 1.5 KiB in 3 files, growth not sampled, newest file written 30 s ago, "
        "60 GiB free on its disk"
    )
    assert check.facts["bytes"] == 1548
    assert check.facts["files"] == 3
    assert check.facts["newest_file_age_seconds"] == 30.0
    assert check.facts["bytes_per_second"] is None


def test_growth_is_measured_while_a_job_appends_to_its_plog(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    plog = write(folder / "debug/plog/plog-77_20251024111652406.log", "start\n")
    appended = 0
    stop = threading.Event()

    def job() -> None:
        nonlocal appended
        with plog.open("a", encoding="utf-8") as out:
            while not stop.is_set():
                line = "[INFO] GE(77,python):2025-10-24-11:16:52.406.000 [graph.cc:1]77 Run: x\n"
                out.write(line)
                out.flush()
                appended += len(line)
                time.sleep(0.005)

    writer = threading.Thread(target=job)
    writer.start()
    try:
        check = log_folder_check(
            fake_host(tmp_path), DoctorOptions(log_dir=folder, sample_seconds=0.5)
        )
    finally:
        stop.set()
        writer.join()
    written = check.facts["written_bytes"]
    assert isinstance(written, int)
    assert 0 < written <= appended
    rate = check.facts["bytes_per_second"]
    assert isinstance(rate, float) and rate > 0
    assert "growing " in check.detail and "/s" in check.detail
    assert check.facts["sample_seconds"] >= 0.5  # type: ignore[operator]


def test_a_debug_flood_warns_with_the_bytes_per_day(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    plog = write(folder / "debug/plog/plog-1_2025.log", "")
    clock = iter([100.0, 102.0])

    def sleep(seconds: float) -> None:
        assert seconds == 2.0
        plog.write_bytes(b"x" * (8 * MIB))  # 4 MiB/s over the 2 s of the fake clock

    host = replace(fake_host(tmp_path), sleep=sleep, monotonic=lambda: next(clock))
    check = log_folder_check(host, DoctorOptions(log_dir=folder))
    assert check.status == "warn"
    assert "growing 4 MiB/s" in check.detail
    assert check.detail.endswith("(~337.5 GiB a day)")
    assert check.action is not None and "ASCEND_GLOBAL_LOG_LEVEL to 3" in check.action


def test_files_deleted_by_rotation_do_not_hide_what_was_written() -> None:
    before = snapshot_of({"old.log": 20 * MIB, "current.log": 100})
    after = snapshot_of({"current.log": 600, "new.log": 50})
    assert written_bytes(before, after) == 550


def snapshot_of(sizes: dict[str, int]) -> FolderSnapshot:
    return FolderSnapshot(sizes, None)


def test_a_nearly_full_disk_warns(tmp_path: Path) -> None:
    folder = tmp_path / "home/ascend/log"
    plog_tree(folder)
    host = fake_host(tmp_path, disk=(100 * GIB, 5 * GIB))
    check = log_folder_check(host, DoctorOptions(sample_seconds=0))
    assert check.status == "warn"
    assert check.detail.endswith("5 GiB free on its disk: the disk is 95% full")
    assert check.action is not None and str(folder) in check.action


def test_an_empty_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "home/ascend/log").mkdir(parents=True)
    check = log_folder_check(fake_host(tmp_path), DoctorOptions(sample_seconds=0))
    assert check.status == "ok"
    assert "0 B in 0 files" in check.detail and "no file yet" in check.detail


def test_links_and_other_non_files_are_not_counted(tmp_path: Path) -> None:
    outside = write(tmp_path / "big.bin", "x" * 5000)
    folder = tmp_path / "logs"
    write(folder / "debug/plog/plog-1_2025.log", "abc")
    (folder / "latest.log").symlink_to(outside)
    os.mkfifo(folder / "pipe")
    taken = snapshot(folder)
    assert (taken.total_bytes, list(taken.sizes)) == (3, [f"{folder}/debug/plog/plog-1_2025.log"])
