"""The file tailer on its own, driven round by round: what it follows, and what it says is lost.

No threads: each test calls `rescan`, `poll` and `idle_work` itself, with a clock it moves, and
collects what the tailer emits.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from npuwatch.collector.discovery import FileFilter
from npuwatch.collector.file_events import MOVE_GRACE_S
from npuwatch.collector.tailed_file import ReadBatch
from npuwatch.collector.tailer import FileGone, FileTailer, TailSettings
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.timestamps import LocalClock
from tests.agent.harness import plog_line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Tailed:
    """A tailer over one folder, and everything it emitted."""

    def __init__(self, root: Path, **settings: float) -> None:
        self.root = root
        self.clock = Clock()
        self.metrics = SelfMetrics()
        self.emitted: list[ReadBatch | FileGone] = []
        self.tailer = FileTailer(
            [root],
            FileFilter(),
            TailSettings(**settings),  # type: ignore[arg-type]
            LocalClock(timezone.utc),
            [],
            self.emitted.append,
            self.metrics,
            monotonic=self.clock,
            wall=self.clock,
        )

    def lines(self) -> list[str]:
        return [
            line
            for item in self.emitted
            if isinstance(item, ReadBatch)
            for record in item.records
            for line in record.original.split("\n")
        ]

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.metrics.value(name, labels)


def lines_text(pid: int, count: int) -> str:
    return "".join(plog_line(pid, number) + "\n" for number in range(count))


def test_a_file_that_came_and_went_between_two_looks_is_counted_with_its_size_unknown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tailed = Tailed(tmp_path)
    tailed.tailer.rescan()
    tailed.tailer.events.hint(str(tmp_path / "plog-1_1.log"), created=True)  # gone before the look
    tailed.tailer.poll()
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 0  # a rename may be told
    tailed.clock.now += MOVE_GRACE_S
    with caplog.at_level(logging.WARNING):
        tailed.tailer.poll()
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 1
    assert tailed.metric("npuwatch_deleted_unread_bytes_total") == 0
    assert "it was never read; its size is not known" in caplog.text
    assert "0 bytes unread" not in caplog.text


def test_a_deleted_file_held_open_and_finished_unread_is_counted_exactly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Reading is slower than the grace after the deletion (one 4 KiB round here): the bytes
    the agent could not read are counted to the byte, from the descriptor's final size."""
    path = tmp_path / "plog-2_1.log"
    path.write_text(lines_text(2, 900), encoding="utf-8")  # about 90 KB
    tailed = Tailed(tmp_path, read_chunk_bytes=4096, round_bytes=4096, deleted_grace_s=1.0)
    tailed.tailer.rescan()
    tailed.tailer.poll()
    size = path.stat().st_size
    with path.open("a", encoding="utf-8") as handle:
        handle.write(lines_text(2, 10))  # written after the first look: the rotation's last
        size = handle.tell()
    path.unlink()
    tailed.tailer.poll()
    tailed.clock.now += 2.0
    with caplog.at_level(logging.WARNING):
        tailed.tailer.idle_work()
    unread = size - 2 * 4096
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 1
    assert tailed.metric("npuwatch_deleted_unread_bytes_total") == unread
    assert f"({unread} bytes unread)" in caplog.text


def test_an_empty_file_is_held_and_followed_at_the_first_round_after_its_first_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plog-3_1.log"
    path.write_bytes(b"")
    tailed = Tailed(tmp_path)
    tailed.tailer.rescan()
    assert tailed.metric("npuwatch_files_open") == 1
    assert tailed.metric("npuwatch_files_followed") == 0
    path.write_text(lines_text(3, 5), encoding="utf-8")
    path.unlink()  # gone before any rescan: the descriptor still reads it
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(3, number) for number in range(5)]
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 0


def test_an_empty_file_left_idle_is_let_go_and_not_opened_again_until_it_has_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plog-4_1.log"
    path.write_bytes(b"")
    tailed = Tailed(tmp_path, idle_close_s=60.0)
    tailed.tailer.rescan()
    tailed.clock.now += 61.0
    tailed.tailer.idle_work()
    assert tailed.metric("npuwatch_files_open") == 0
    tailed.tailer.rescan()
    assert tailed.metric("npuwatch_files_open") == 0
    path.write_text(lines_text(4, 3), encoding="utf-8")
    tailed.tailer.rescan()
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(4, number) for number in range(3)]


def test_a_file_renamed_before_it_was_looked_at_is_followed_under_its_new_name(
    tmp_path: Path,
) -> None:
    """Created, then renamed before the tailer took the events: the old name is gone, which is
    no loss; the new name is followed."""
    old, new = tmp_path / "plog-5_1.log", tmp_path / "plog-5_1.log.1"
    tailed = Tailed(tmp_path)
    tailed.tailer.rescan()
    old.write_text(lines_text(5, 4), encoding="utf-8")
    tailed.tailer.events.hint(str(old), created=True)
    old.rename(new)
    tailed.tailer.events.moved(str(old), str(new))
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(5, number) for number in range(4)]
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 0


def test_a_followed_file_renamed_is_not_finished_when_its_old_name_goes(tmp_path: Path) -> None:
    """The event for the old name says "gone"; the one for the new name finds the same file:
    it is still followed, not read to its end and forgotten (which would make the next rescan
    read it again from its start)."""
    old, new = tmp_path / "plog-6_1.log", tmp_path / "plog-6_1.log.1"
    old.write_text(lines_text(6, 4), encoding="utf-8")
    tailed = Tailed(tmp_path, deleted_grace_s=0.5)
    tailed.tailer.rescan()
    tailed.tailer.poll()
    old.rename(new)
    tailed.tailer.events.moved(str(old), str(new))
    tailed.tailer.poll()
    tailed.clock.now += 1.0
    tailed.tailer.idle_work()
    tailed.tailer.rescan()
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(6, number) for number in range(4)]
    assert not [item for item in tailed.emitted if isinstance(item, FileGone)]


def test_a_file_renamed_in_two_events_a_round_apart_is_no_loss(tmp_path: Path) -> None:
    """The creation is taken in one round, the rename (held back by watchdog to pair its two
    halves) in the next: the old name, missing at the first look, is not counted lost."""
    old, new = tmp_path / "plog-7_1.log", tmp_path / "plog-7_1.log.1"
    tailed = Tailed(tmp_path)
    tailed.tailer.rescan()
    old.write_text(lines_text(7, 4), encoding="utf-8")
    old.rename(new)
    tailed.tailer.events.hint(str(old), created=True)
    tailed.tailer.poll()
    tailed.clock.now += 0.5
    tailed.tailer.events.moved(str(old), str(new))
    tailed.tailer.poll()
    tailed.clock.now += MOVE_GRACE_S
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(7, number) for number in range(4)]
    assert tailed.metric("npuwatch_files_deleted_unread_total") == 0


def test_a_file_written_while_the_reader_waited_is_not_taken_for_idle(tmp_path: Path) -> None:
    """The reader waited for room in the pipeline (a flood) longer than the idle-flush time,
    while the writer finished the half-written line and went on: the file is not idle, and its
    last line must not be flushed in two pieces."""
    path = tmp_path / "plog-9_1.log"
    whole = lines_text(9, 3)
    half = plog_line(9, 3)[:30]
    path.write_text(whole + half, encoding="utf-8")
    tailed = Tailed(tmp_path, idle_flush_s=1.0)
    tailed.tailer.rescan()
    tailed.tailer.poll()
    with path.open("a", encoding="utf-8") as handle:
        handle.write(plog_line(9, 3)[30:] + "\n" + plog_line(9, 4) + "\n")
    tailed.clock.now += 5.0  # no round for five seconds
    tailed.tailer.idle_work()
    tailed.tailer.poll()
    tailed.tailer.flush_assembled(tailed.emitted.append)
    assert tailed.lines() == [plog_line(9, number) for number in range(5)]


def test_dates_printed_without_a_year_take_the_year_of_the_followed_file(tmp_path: Path) -> None:
    """torch_npu's watchdog (c10) prints `E0114 09:47:30.118342839`: the agent completes it as
    scan does, with the file's first full date or else its modification time."""
    path = tmp_path / "train_rank2.log"
    path.write_text(
        "[rank2]:[E0114 09:47:30.118342839 compiler_depend.ts:1795] To avoid data "
        "inconsistency, we are taking the entire process down.\n",
        encoding="utf-8",
    )
    modified = datetime(2025, 6, 1, tzinfo=timezone.utc).timestamp()
    os.utime(path, (modified, modified))
    tailed = Tailed(tmp_path)
    tailed.tailer.rescan()
    tailed.tailer.poll()
    tailed.clock.now += 60.0
    tailed.tailer.idle_work()
    records = [r for item in tailed.emitted if isinstance(item, ReadBatch) for r in item.records]
    assert [r.timestamp_us for r in records] == [
        int(datetime(2025, 1, 14, 9, 47, 30, 118342, tzinfo=timezone.utc).timestamp() * 1e6)
    ]
