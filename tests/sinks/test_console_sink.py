"""The console sink when its output is a file on a real full disk (stdout redirected to a 1 MiB
tmpfs): the thread lives, says so once, and once there is room prints every line again from
its cursor (a line may come twice, none is skipped)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.store import CommitBatch, Journal, JournalSettings
from npuwatch.sinks.console_sink import ConsoleSink
from npuwatch.sinks.follower import JournalFollower
from tests.agent.harness import wait_until
from tests.journal.conftest import numbered_blocks, plog_line
from tests.journal.full_disk import fill, small_tmpfs


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


def test_an_output_on_a_full_disk_is_printed_to_again_from_the_cursor_when_there_is_room(
    tmp_path: Path, disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = Journal(tmp_path / "journal", JournalSettings(sync="normal"))
    journal.open()
    committed, stop = threading.Condition(), threading.Event()
    output = disk / "console.txt"
    expected = [plog_line(n) for n in range(400)]  # more than one write buffer of text
    with output.open("w", encoding="utf-8") as out, caplog.at_level(logging.WARNING):
        sink = JournalFollower(
            ConsoleSink(out),
            tmp_path / "journal",
            CursorStore(tmp_path / "cursors.json"),
            committed,
            stop,
        )
        filler = fill(disk)
        journal.commit(CommitBatch(numbered_blocks(0, 400)))
        sink.start()
        try:
            wait_until(lambda: any(r.levelname == "ERROR" for r in caplog.records), 30)
            threading.Event().wait(1.5)  # a few refused tries
            assert sink.thread.is_alive()
            filler.unlink()
            wait_until(lambda: set(output.read_text().splitlines()) == set(expected), 30)
        finally:
            stop.set()
            with committed:
                committed.notify_all()
            sink.thread.join(30)
            journal.close()
    assert not sink.thread.is_alive()
    printed = Counter(output.read_text().splitlines())
    assert set(printed) == set(expected) and min(printed.values()) >= 1
    assert [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records] == [
        ("ERROR", "cannot print to the console"),
        ("WARNING", "the console takes output again"),
    ]
    assert CursorStore(tmp_path / "cursors.json").get("console") == sink.cursor
