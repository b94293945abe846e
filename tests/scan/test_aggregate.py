"""`scan` over whole log trees: counts, codes, first errors with context, problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import year_of
from npuwatch.scan.aggregate import ScanAggregator
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree
from npuwatch.terminal import Palette
from tests.conftest import TREES, utc_clock


def scan(root: Path, context: int = 50):  # type: ignore[no-untyped-def]
    return scan_tree(root, utc_clock(), context_lines=context)


def test_hccl_timeout_tree_counts_every_line_and_every_process() -> None:
    root = TREES / "hccl-timeout"
    result = scan(root)
    lines = sum(path.read_bytes().count(b"\n") for path in root.rglob("*.log"))
    assert result.lines == lines
    assert result.files == 16
    pids = {p.pid for p in result.processes.values() if p.pid is not None}
    assert pids == {*range(3300, 3308), 7790}
    assert result.devices == {0, 1, 2, 3}
    assert result.codes["EI0002"].count == 14  # 7 ranks, in the plog and on the console
    assert {pid for _, pid in result.codes["EI0002"].processes} == {*range(3300, 3306), 3307}


def test_the_earliest_first_error_is_the_root_cause_on_rank_6() -> None:
    result = scan(TREES / "hccl-timeout")
    assert all(error.timestamp_us is not None for error in result.first_errors)
    earliest = min(result.first_errors, key=lambda e: e.timestamp_us or 0)
    assert earliest.pid == 7790 and "dump_err_cqe" in earliest.original
    rank6 = next(e for e in result.first_errors if e.pid == 3306)
    assert "Send work request failed" in rank6.message


def test_first_error_context_is_the_lines_before_it_in_its_file() -> None:
    result = scan(TREES / "aicore-exception", context=5)
    first = next(e for e in result.first_errors if e.pid == 4810)
    assert len(first.context) == 5
    assert first.context[-1].startswith("[INFO] RUNTIME(4810,python3)")
    text = (Path(first.path)).read_text().splitlines()
    assert text[first.line_number - 1] == first.original.split("\n")[0]
    assert text[first.line_number - 6 : first.line_number - 1] == first.context


def test_out_of_memory_tree_reports_codes_with_times_and_processes() -> None:
    result = scan(TREES / "out-of-memory")
    assert set(result.codes) == {"EL0004", "E30009"}
    assert result.codes["EL0004"].first_us == 1759977672077512  # 2025-10-09T02:41:12.077512Z
    assert result.levels["ERROR"] >= 5


def test_firmware_time_before_clock_sync_does_not_widen_the_time_span() -> None:
    result = scan(TREES / "aicore-exception")
    assert result.first_us is not None and result.first_us > 1_700_000_000_000_000
    assert result.flags["pre_clock_sync"] == 1


def test_a_clean_run_has_no_error_records() -> None:
    result = scan(TREES / "clean-run")
    assert result.error_records == 0 and not result.codes and not result.first_errors


def test_unreadable_files_and_odd_entries_are_problems_not_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "debug" / "plog").mkdir(parents=True)
    good = tmp_path / "debug" / "plog" / "plog-1_20250101000000000.log"
    good.write_text("[ERROR] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:x\n")
    (tmp_path / "debug" / "loop").symlink_to(tmp_path / "debug", target_is_directory=True)
    (tmp_path / "debug" / "plog" / "binary.log").write_bytes(os.urandom(4096))
    vanished = tmp_path / "debug" / "plog" / "plog-2_20250101000000000.log"
    vanished.write_text("x\n")
    import npuwatch.scan.host_part as scan_tree_module

    real_open = scan_tree_module.open_binary

    def failing_open(path: Path, named: bool = False):  # type: ignore[no-untyped-def]
        if path == vanished:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, named)

    monkeypatch.setattr(scan_tree_module, "open_binary", failing_open)
    result = scan(tmp_path)
    assert result.problems == [f"cannot read {vanished}: Permission denied"]
    assert result.files == 2 and result.error_records >= 1  # the unreadable one is not scanned


def test_the_text_report_names_codes_first_errors_and_processes() -> None:
    result = scan(TREES / "hccl-timeout")
    text = render_scan(result, utc_clock().zone, Palette(False))
    assert "Error codes (1)" in text and "EI0002" in text
    assert "First ERROR of each process (16), earliest first" in text
    assert text.index("dump_err_cqe") < text.index("Send work request failed")
    assert text.index("Send work request failed") < text.index("[ERROR] RUNTIME(3300,python3)")
    assert text.rstrip().endswith("error records in 231 records.")


def test_year_less_lines_take_the_year_of_the_files_dated_lines_not_its_copy_time(
    tmp_path: Path,
) -> None:
    """A training log copied (or cloned) today: c10's `[E914 …]` has no year; the dated line
    under it says 2025, and that wins over the file's modification time."""
    log = tmp_path / "job" / "train-rank0.log"
    log.parent.mkdir()
    log.write_text(
        "[rank0]:[E914 09:37:31.000512402 compiler_depend.ts:429] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkHCCL(SeqNum=7, OpType=ALLREDUCE)\n"
        "[rank0]: [ERROR] 2025-09-14-09:37:31 (PID:3300, Device:0, RankID:0) ERR02200 DIST call "
        "hccl api failed.\n"
    )
    in_2030 = 1_900_000_000  # 2030-03-17
    os.utime(log, (in_2030, in_2030))
    result = scan(tmp_path)
    assert result.first_us is not None and result.last_us is not None
    assert {year_of(result.first_us), year_of(result.last_us)} == {2025}


REAL = "[INFO] RUNTIME(4100,python3):2025-09-14-09:37:{second}.000.000 [a.cc:1] 4101 step"
FIRMWARE = "[INFO]HSM:1970-01-01 00:03:45.333 hpre init succeed."
"""A firmware line of a device's boot, before its clock sync: no pid, a 1970 time."""


@pytest.mark.parametrize(
    "lines",
    [
        [REAL.format(second=31), FIRMWARE, REAL.format(second=32)],
        [FIRMWARE, REAL.format(second=31), REAL.format(second=32)],
        [REAL.format(second=31), REAL.format(second=32), FIRMWARE],
    ],
    ids=["firmware between", "firmware first", "firmware last"],
)
def test_a_process_spans_its_real_times_with_the_pid_less_lines_of_its_file(
    tmp_path: Path, lines: list[str]
) -> None:
    """Lines without a pid in plog-4100_… belong to process 4100; their 1970 times (before
    clock sync) are no times the process ran at, whichever line comes first."""
    log = tmp_path / "plog" / "plog-4100_20250914093700000.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    result = scan(tmp_path)
    [process] = result.processes.values()
    assert (process.pid, process.name, process.records) == (4100, "python3", 3)
    assert process.first_us == 1757842651000000  # 2025-09-14T09:37:31Z
    assert process.last_us == 1757842652000000


def test_a_firmware_time_stands_only_until_a_real_time_of_the_process_comes() -> None:
    aggregator = ScanAggregator("tree")
    parser = StreamParser(utc_clock(), path="plog/plog-4100_20250914093700000.log")
    aggregator.start_file(parser.source, 0)
    offset = 0

    def batch(*lines: str) -> None:
        nonlocal offset
        data = "".join(f"{line}\n" for line in lines).encode()
        aggregator.add_batch(parser.feed(data, offset) + parser.flush())
        offset += len(data)

    batch(FIRMWARE)
    [process] = aggregator.result.processes.values()
    assert process.first_us == process.last_us == 225_333_000  # nothing better known yet
    batch(REAL.format(second=31), FIRMWARE, REAL.format(second=32))
    assert process.first_us == 1757842651000000
    assert process.last_us == 1757842652000000
    batch(FIRMWARE)
    assert process.last_us == 1757842652000000  # a firmware time never replaces a real one
    assert process.records == 5


def test_a_process_with_firmware_times_only_keeps_them(tmp_path: Path) -> None:
    log = tmp_path / "device-2" / "device-2_20250914093700000.log"
    log.parent.mkdir()
    log.write_text(
        "[INFO] IMP(-2,IMP): 1970-01-01-00:00:00.000.000 1 (device_id:2 die_id:0) [IMP] begin\n"
        "[INFO] IMP(-2,IMP): 1970-01-01-00:00:01.000.000 1 (device_id:2 die_id:0) [IMP] done\n"
    )
    [process] = scan(tmp_path).processes.values()
    assert (process.first_us, process.last_us) == (0, 1_000_000)
