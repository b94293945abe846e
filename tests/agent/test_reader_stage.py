"""The reader thread's pacing: it survives any number of rounds that find nothing."""

from __future__ import annotations

import threading

from npuwatch.agent.reader import ReaderStage, ReaderTiming


class QuietTailer:
    """Files that never grow; stops the reader after `rounds` polls."""

    def __init__(self, rounds: int, stop: threading.Event) -> None:
        self.roots: list[str] = []
        self.polls = 0
        self.closed = False
        self._rounds = rounds
        self._stop = stop

    def rescan(self) -> None:
        pass

    def poll(self) -> int:
        self.polls += 1
        if self.polls >= self._rounds:
            self._stop.set()
        return 0

    def idle_work(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class AlwaysSet(threading.Event):
    """A wake that is never cleared: every pause ends at once, as under a storm of file events."""

    def clear(self) -> None:
        pass


def test_thousands_of_quiet_rounds_in_a_row_do_not_stop_the_reader() -> None:
    stop = threading.Event()
    tailer = QuietTailer(rounds=5_000, stop=stop)
    wake = AlwaysSet()
    wake.set()
    reader = ReaderStage(tailer, None, wake, ReaderTiming(), stop)  # type: ignore[arg-type]
    failures: list[BaseException] = []
    threading.excepthook = lambda args: failures.append(args.exc_value)  # type: ignore[assignment]
    try:
        reader.start()
        reader.thread.join(timeout=30)
    finally:
        threading.excepthook = threading.__excepthook__
    assert not reader.thread.is_alive()
    assert failures == []
    assert tailer.polls == 5_000
    assert tailer.closed
