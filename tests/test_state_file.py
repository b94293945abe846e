"""A state file on a real full disk (a 1 MiB tmpfs): the write is refused without an exception,
nothing is left behind, the content waits and is written once there is room, with one line
when it starts failing and one when it is written again."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.state_file import StateFile
from tests.journal.full_disk import fill, small_tmpfs


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def state_file(folder: Path, clock: Clock) -> StateFile:
    return StateFile(folder / "cursors.json", "sends entries again", max_pause_s=4, monotonic=clock)


def test_a_refused_write_keeps_the_old_file_leaves_no_temporary_and_waits_for_room(
    small_filesystem: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    state = state_file(small_filesystem, clock)
    assert state.save(b"first")
    filler = fill(small_filesystem)
    with caplog.at_level(logging.INFO):
        assert not state.save(b"second")
        assert state.behind
        assert sorted(p.name for p in small_filesystem.iterdir()) == ["cursors.json", "filler"]
        assert state.path.read_bytes() == b"first"
        clock.now += 10
        assert not state.save(b"third")  # still full: no second ERROR line
        filler.unlink()
        clock.now += 10
        assert state.retry()
    assert state.path.read_bytes() == b"third"
    assert not state.behind
    assert [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records] == [
        ("ERROR", f"cannot write {state.path}"),
        ("WARNING", f"{state.path} is written again"),
    ]
    assert "sends entries again" in caplog.records[0].getMessage()
    assert sorted(p.name for p in small_filesystem.iterdir()) == ["cursors.json"]


def test_after_a_refused_write_the_next_tries_wait_a_pause_that_doubles_to_its_bound(
    small_filesystem: Path,
) -> None:
    clock = Clock()
    state = state_file(small_filesystem, clock)
    filler = fill(small_filesystem)
    assert not state.save(b"x")  # at 100: the next try at 100.5
    for now in (100.5, 101.5, 103.5, 107.5):  # refused again: pauses of 1, 2, 4, 4 (the bound)
        clock.now = now
        assert not state.retry()
    filler.unlink()
    clock.now = 111.4
    assert not state.retry()  # room, but the pause is not over: not tried
    assert not state.path.exists()
    clock.now = 111.5
    assert state.retry()
    assert state.path.read_bytes() == b"x"


def test_a_last_try_at_stop_does_not_wait_for_the_pause(small_filesystem: Path) -> None:
    clock = Clock()
    state = state_file(small_filesystem, clock)
    filler = fill(small_filesystem)
    assert not state.save(b"x")
    filler.unlink()
    assert not state.save(b"y")  # within the pause: not tried
    assert state.save(b"z", at_once=True)
    assert state.path.read_bytes() == b"z"


def test_nothing_waiting_means_retry_has_nothing_to_do(tmp_path: Path) -> None:
    state = state_file(tmp_path, Clock())
    assert state.retry()
    assert not state.path.exists()
