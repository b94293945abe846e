"""What the agent's signals ask for, told to its main loop without taking a lock.

A signal handler runs in the main thread between two bytecodes of whatever it interrupted. The
agent's handlers used to call `threading.Event.set()`, which takes the event's lock; the main
loop's `Event.wait()` holds that same lock for a moment on each turn, and a SIGTERM arriving in
that moment deadlocked the handler against the code it had interrupted: the agent never stopped
(and the handler never reached the stop's own deadline). Here a handler only sets a flag and
writes a byte to a pipe (the self-pipe the loop waits on with `select`), neither of which can
block on anything the interrupted code holds.
"""

from __future__ import annotations

import contextlib
import os
import select


class SignalRequests:
    """Stop and reload, as asked by signal handlers; `wait` returns when either is asked."""

    def __init__(self) -> None:
        self.stop = False
        self.reload = False
        self._read, self._write = os.pipe()
        for descriptor in (self._read, self._write):
            os.set_blocking(descriptor, False)

    def ask_stop(self) -> None:
        self.stop = True
        self._wake()

    def ask_reload(self) -> None:
        self.reload = True
        self._wake()

    def wait(self, timeout: float) -> None:
        """Until a request comes, or `timeout` seconds."""
        if self.stop or self.reload:
            return
        readable, _, _ = select.select([self._read], [], [], timeout)
        if readable:
            try:
                while os.read(self._read, 512):
                    pass
            except BlockingIOError:  # emptied
                pass

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full of wake-ups already: it wakes anyway
            os.write(self._write, b"\0")
