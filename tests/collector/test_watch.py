"""File events as hints, with real inotify: what the watcher tells the tailer, and what it counts.

Events arrive on watchdog's observer thread, so each test waits for them with a bounded poll
(`wait_until`). A negative ("no hint for folders") is checked against a file event made after it:
the events of one root come in order, so once the later one is told, the earlier one would have
been.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.inotify import InotifyEmitter

from npuwatch.collector.watch import FileWatcher
from npuwatch.metrics import SelfMetrics
from tests.agent.harness import wait_until

WAIT_S = 10.0
WATCH_FAILED = {"reason": "watch_failed"}


class RecordedHints:
    """Every hint and move the watcher gave, in order (appended from the observer thread)."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str, bool | str]] = []

    def hint(self, path: str, created: bool = False) -> None:
        self.told.append(("hint", path, created))

    def moved(self, source: str, destination: str) -> None:
        self.told.append(("moved", source, destination))

    def about(self, path: Path) -> list[tuple[str, str, bool | str]]:
        return [told for told in self.told if told[1] == str(path)]


class Watched:
    """A watcher with its recorded hints, wake event and metrics."""

    def __init__(self, observer_factory: Callable[[], BaseObserver] = Observer) -> None:
        self.hints = RecordedHints()
        self.wake = threading.Event()
        self.metrics = SelfMetrics()
        self.watcher = FileWatcher(self.hints, self.wake, self.metrics, observer_factory)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.metrics.value(name, labels)

    def wait_for(self, path: Path) -> list[tuple[str, str, bool | str]]:
        """Wait until `path` was told about, and return what was told about it."""
        wait_until(lambda: bool(self.hints.about(path)), WAIT_S)
        return self.hints.about(path)


@pytest.fixture
def watched() -> Iterator[Callable[..., Watched]]:
    """Make watchers; every one is stopped after the test."""
    made: list[Watched] = []

    def make(observer_factory: Callable[[], BaseObserver] = Observer) -> Watched:
        made.append(Watched(observer_factory))
        return made[-1]

    yield make
    for one in made:
        one.watcher.stop()


class RefusingObserver(Observer):
    """A real observer that cannot watch the folders named `refused` (as when inotify's watch
    limit is reached)."""

    refused: tuple[Path, ...] = ()

    def schedule(
        self,
        event_handler: FileSystemEventHandler,
        path: str | Path,
        *,
        recursive: bool = False,
        event_filter: list[type[FileSystemEvent]] | None = None,
        follow_symlink: bool = False,
    ) -> ObservedWatch:
        if Path(path) in self.refused:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return super().schedule(
            event_handler,
            path,
            recursive=recursive,
            event_filter=event_filter,
            follow_symlink=follow_symlink,
        )


def refusing(*roots: Path) -> Callable[[], BaseObserver]:
    def factory() -> BaseObserver:
        observer = RefusingObserver()
        observer.refused = roots
        return observer

    return factory


def test_a_file_created_in_a_watched_root_is_hinted_as_created_and_wakes_the_reader(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    one = watched()
    one.watcher.watch([tmp_path])
    assert not one.wake.is_set()
    path = tmp_path / "plog-1_20250914093300000.log"
    path.write_text("line\n", encoding="utf-8")
    told = one.wait_for(path)
    assert told[0] == ("hint", str(path), True)
    assert one.wake.is_set()


def test_a_file_in_a_folder_made_after_the_watch_started_is_hinted_as_created(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    """CANN makes a folder per process (`debug/device-0/`) while the agent runs. inotify may
    tell the file twice (the real event and watchdog's look into the new folder): hints, so
    every one of them says created."""
    one = watched()
    one.watcher.watch([tmp_path])
    folder = tmp_path / "debug" / "device-0"
    folder.mkdir(parents=True)
    path = folder / "device-2001_20250914093300000.log"
    path.write_text("line\n", encoding="utf-8")
    told = one.wait_for(path)
    assert set(told) == {("hint", str(path), True)}
    assert one.wake.is_set()


def test_a_renamed_file_is_told_as_a_move_and_not_as_a_deletion(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    source = tmp_path / "plog-1_20250914093300000.log"
    source.write_text("line\n", encoding="utf-8")
    destination = tmp_path / "plog-1_20250914093300000.log.1"
    one = watched()
    one.watcher.watch([tmp_path])
    source.rename(destination)
    wait_until(lambda: bool(one.hints.told), WAIT_S)
    assert one.hints.told == [("moved", str(source), str(destination))]
    assert one.wake.is_set()


def test_a_deleted_file_is_hinted_as_not_created(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    path = tmp_path / "plog-1_20250914093300000.log"
    path.write_text("line\n", encoding="utf-8")
    one = watched()
    one.watcher.watch([tmp_path])
    path.unlink()
    assert one.wait_for(path) == [("hint", str(path), False)]
    assert one.wake.is_set()


def test_folders_made_renamed_and_removed_give_no_hint(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    one = watched()
    one.watcher.watch([tmp_path])
    folder = tmp_path / "plog"
    folder.mkdir()
    folder.rename(tmp_path / "plog.old")
    (tmp_path / "plog.old").rmdir()
    later = tmp_path / "after-the-folders.log"
    later.write_text("line\n", encoding="utf-8")
    one.wait_for(later)
    assert one.hints.told == [("hint", str(later), True)]


def test_a_root_that_does_not_exist_yet_is_watched_at_the_first_look_after_it_appears(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    present = tmp_path / "present"
    present.mkdir()
    missing = tmp_path / "missing"
    one = watched()
    one.watcher.watch([present, missing])
    assert one.metric("npuwatch_watch_active") == 1
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 0
    missing.mkdir()
    one.watcher.watch([present, missing])
    path = missing / "plog-1_20250914093300000.log"
    path.write_text("line\n", encoding="utf-8")
    assert one.wait_for(path) == [("hint", str(path), True)]
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 0


def test_a_root_that_cannot_be_watched_is_counted_and_logged_once_and_events_are_off(
    tmp_path: Path, watched: Callable[..., Watched], caplog: pytest.LogCaptureFixture
) -> None:
    good = tmp_path / "good"
    bad = tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    one = watched(refusing(bad))
    with caplog.at_level(logging.WARNING, logger="npuwatch.collector.watch"):
        for _ in range(3):  # as every rescan does
            one.watcher.watch([good, bad])
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 1
    warnings = [r for r in caplog.records if r.name == "npuwatch.collector.watch"]
    assert len(warnings) == 1
    assert str(bad) in warnings[0].getMessage()
    assert one.metric("npuwatch_watch_active") == 0
    path = good / "plog-1_20250914093300000.log"  # the other root is watched all the same
    path.write_text("line\n", encoding="utf-8")
    assert one.wait_for(path) == [("hint", str(path), True)]


def test_file_events_are_reported_active_when_every_root_is_watched(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    roots = [tmp_path / "debug", tmp_path / "run"]
    for root in roots:
        root.mkdir()
    one = watched()
    assert one.metric("npuwatch_watch_active") == 0
    one.watcher.watch(roots)
    assert one.metric("npuwatch_watch_active") == 1
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 0


def test_a_root_watched_after_failing_once_turns_file_events_back_on(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    factory = refusing(root)
    one = watched(factory)
    one.watcher.watch([root])
    assert one.metric("npuwatch_watch_active") == 0
    observer = one.watcher.thread
    assert isinstance(observer, RefusingObserver)
    observer.refused = ()  # watches were freed
    one.watcher.watch([root])
    assert one.metric("npuwatch_watch_active") == 1
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 1


def test_stopping_the_watcher_ends_its_observer_thread(
    tmp_path: Path, watched: Callable[..., Watched]
) -> None:
    one = watched()
    one.watcher.watch([tmp_path])
    assert one.watcher.thread.is_alive()
    one.watcher.stop()
    assert not one.watcher.thread.is_alive()


class _EmitterThatCannotStart(InotifyEmitter):
    """An inotify emitter whose watches cannot be set up, as when the host's inotify watch
    limit (fs.inotify.max_user_watches) is spent by the thousands of PID folders of a job."""

    def on_thread_start(self) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")


class NoWatchLeftObserver(Observer):
    """The real observer, on a host with no inotify watch left."""

    def __init__(self) -> None:
        super().__init__()
        self._emitter_class = _EmitterThatCannotStart


def test_a_root_whose_inotify_watches_cannot_be_set_up_is_counted_not_raised(
    tmp_path: Path, watched: Callable[..., Watched], caplog: pytest.LogCaptureFixture
) -> None:
    """watchdog sets a watch up when the emitter starts, which raised out of `watch` (and
    ended the reader thread) when it happened at the observer's start."""
    one = watched(NoWatchLeftObserver)
    with caplog.at_level(logging.WARNING):
        one.watcher.watch([tmp_path])
        one.watcher.watch([tmp_path])
    assert one.metric("npuwatch_source_problems_total", WATCH_FAILED) == 1
    assert one.metric("npuwatch_watch_active") == 0
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        f"cannot watch {tmp_path} for file events"
    ]


def test_a_watcher_that_never_watched_leaves_no_thread_and_no_descriptor(
    tmp_path: Path,
) -> None:
    before = set(threading.enumerate())
    descriptors = len(list(Path("/proc/self/fd").iterdir()))
    watcher = FileWatcher(RecordedHints(), threading.Event(), SelfMetrics())
    watcher.watch([tmp_path / "absent"])
    watcher.stop()
    assert watcher.thread is None
    assert set(threading.enumerate()) == before
    assert len(list(Path("/proc/self/fd").iterdir())) == descriptors
