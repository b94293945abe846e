"""Signal handlers tell the agent's main loop to stop or reload without taking a lock."""

from __future__ import annotations

import os
import signal
import threading
import time

from npuwatch.service.signal_requests import SignalRequests


def test_a_signal_wakes_the_waiting_loop_at_once_and_says_what_it_asked() -> None:
    requests = SignalRequests()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: requests.ask_stop())
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        started = time.monotonic()
        while not requests.stop and time.monotonic() - started < 10:
            requests.wait(5.0)
        assert requests.stop and not requests.reload
        assert time.monotonic() - started < 4.0  # woken by the signal, not by the timeout
    finally:
        signal.signal(signal.SIGUSR1, previous)
        requests.close()


def test_signals_arriving_anywhere_in_the_loop_never_hang_it() -> None:
    """A burst of signals while the loop waits and clears over and over: every handler returns
    (an `Event.set()` in a handler could wait forever on the lock its own `wait()` held)."""
    requests = SignalRequests()
    handled = 0

    def on_signal(signum: int, frame: object) -> None:
        nonlocal handled
        handled += 1
        requests.ask_reload()

    previous = signal.signal(signal.SIGUSR1, on_signal)
    sent = 2000
    sender = threading.Thread(
        target=lambda: [os.kill(os.getpid(), signal.SIGUSR1) for _ in range(sent)], daemon=True
    )
    try:
        sender.start()
        deadline = time.monotonic() + 30
        while sender.is_alive() and time.monotonic() < deadline:
            requests.wait(0.001)
            requests.reload = False
        sender.join(5)
        assert not sender.is_alive()
        assert handled > 0  # signals of one kind coalesce while pending: not every one is seen
    finally:
        signal.signal(signal.SIGUSR1, previous)
        requests.close()
