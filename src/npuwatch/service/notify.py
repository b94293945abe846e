"""The systemd notify protocol, and a heartbeat that feeds the watchdog only while the workers live.

sd_notify(3) is one datagram of newline-separated `KEY=value` lines sent to the AF_UNIX socket named
by `$NOTIFY_SOCKET`. That is small enough to write here instead of depending on libsystemd.
"""

from __future__ import annotations

import math
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

HEARTBEAT_THREAD_NAME = "npuwatch-heartbeat"
DEFAULT_SEND_TIMEOUT = 1.0
"""Seconds a notification may wait for room in systemd's socket queue before it is given up."""


class SystemdNotifier:
    """Tells systemd about the agent's state; every call is a no-op outside systemd.

    No method raises because of the socket: systemd going away (or being re-executed) must not
    take the agent down, so a failed send returns False and the next one tries again.
    """

    def __init__(
        self,
        address: str | None,
        *,
        watchdog_interval: float | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
    ) -> None:
        """Notify the socket at `address` (a path, or a NUL byte and an abstract name), or nothing
        when it is None; `watchdog_interval` is how often systemd expects `watchdog()`."""
        self._address = address
        self._watchdog_interval = watchdog_interval
        self._send_timeout = send_timeout
        self._socket: socket.socket | None = None
        self._closed = False
        # The heartbeat thread pings while the main thread reports status: one sender at a time.
        self._lock = threading.Lock()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], *, pid: int | None = None) -> SystemdNotifier:
        """The notifier systemd asked for through `$NOTIFY_SOCKET` and `$WATCHDOG_USEC`.

        `pid` is this process's id (default `os.getpid()`), compared with `$WATCHDOG_PID`.
        """
        return cls(
            _socket_address(environ.get("NOTIFY_SOCKET", "")),
            watchdog_interval=_watchdog_interval(environ, os.getpid() if pid is None else pid),
        )

    @property
    def enabled(self) -> bool:
        """Whether there is a systemd to tell anything to."""
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between two `watchdog()` calls (half of `WatchdogSec=`), or None if unwatched."""
        return self._watchdog_interval

    def notify(self, *assignments: str) -> bool:
        """Send `KEY=value` assignments in one datagram; True when systemd's socket took it.

        False when disabled, closed, or the send failed. Raises ValueError only for an assignment
        that is not one `KEY=value` line, which is a bug in the caller.
        """
        for assignment in assignments:
            if "=" not in assignment or "\n" in assignment:
                raise ValueError(f"not a KEY=value line: {assignment!r}")
        if not assignments or self._address is None:
            return False
        # backslashreplace: a status may quote a file name decoded with surrogateescape.
        message = "\n".join(assignments).encode("utf-8", "backslashreplace")
        with self._lock:
            if self._closed:
                return False
            try:
                if self._socket is None:
                    self._socket = self._connect(self._address)
                self._socket.send(message)
            except OSError:
                # A refused or vanished peer leaves the socket useless; the next call reconnects,
                # which also finds a socket that systemd re-created at the same path.
                self._drop_socket()
                return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """Tell systemd that start-up is complete (and what the agent is doing)."""
        return self.notify("READY=1", *_status(status))

    def stopping(self, status: str | None = None) -> bool:
        """Tell systemd that shutdown has begun, so it waits `TimeoutStopSec=` for it."""
        return self.notify("STOPPING=1", *_status(status))

    def status(self, text: str) -> bool:
        """Show `text` as the service's status line (`systemctl status`)."""
        return self.notify(*_status(text))

    def watchdog(self) -> bool:
        """Ping the watchdog: the agent is alive and working."""
        return self.notify("WATCHDOG=1")

    def close(self) -> None:
        """Release the socket; later notifications are no-ops."""
        with self._lock:
            self._closed = True
            self._drop_socket()

    def __enter__(self) -> SystemdNotifier:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _connect(self, address: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # Connected rather than sendto(): a send to a full queue then waits in poll() for room
            # until the timeout, where an unconnected one would spin on EAGAIN.
            sock.settimeout(self._send_timeout)
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock

    def _drop_socket(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class WatchdogNotifier(Protocol):
    """What the heartbeat needs from a notifier."""

    def watchdog(self) -> bool: ...

    def status(self, text: str) -> bool: ...


class Heartbeat:
    """A thread that pings systemd's watchdog while, and only while, every worker thread lives.

    A worker that died (an uncaught exception) leaves the agent running but doing nothing. The
    heartbeat then stops pinging, so systemd's `WatchdogSec=` restarts the service, and says which
    thread died in the status line so that `systemctl status` shows why.
    """

    def __init__(
        self,
        notifier: WatchdogNotifier,
        workers: Callable[[], Sequence[threading.Thread]],
        interval: float,
    ) -> None:
        """Every `interval` seconds, check the threads that `workers()` returns (started ones)."""
        if not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"heartbeat interval must be a positive number of seconds: {interval}")
        self._notifier = notifier
        self._workers = workers
        self._interval = interval
        self._reported: set[threading.Thread] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        """Check the workers once and ping or report; True when every worker was alive."""
        dead = [thread for thread in self._workers() if not thread.is_alive()]
        if not dead:
            self._notifier.watchdog()
            return True
        for thread in dead:
            # Reported once, but until systemd took the message: a lost status would leave the
            # restart unexplained.
            if thread not in self._reported and self._notifier.status(
                f"worker thread {thread.name} died"
            ):
                self._reported.add(thread)
        return False

    def start(self) -> None:
        """Start beating now and every `interval` seconds after, until `stop()`."""
        if self._thread is not None:
            raise RuntimeError("a heartbeat can be started only once")
        # Not a daemon: a daemon thread could be cut off mid-send at interpreter exit. The price
        # is that stop() must be called, which `with Heartbeat(...)` guarantees.
        self._thread = threading.Thread(target=self._run, name=HEARTBEAT_THREAD_NAME, daemon=False)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and wait for the thread to end; safe to call twice or before `start()`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        # An exception from workers() ends this thread, and with it the pings: systemd restarts a
        # service whose health can no longer be checked, which is the safe side.
        while True:
            self.beat()
            if self._stop.wait(self._interval):
                return


def _status(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    # One datagram line per assignment: a newline in the text would start a new assignment.
    return ("STATUS=" + " ".join(text.splitlines()),)


def _socket_address(value: str) -> str | None:
    """The socket address `$NOTIFY_SOCKET` names, or None when it names none we can use."""
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]  # Linux abstract namespace
    # Unset, empty, or a kind this agent does not speak (systemd in a VM may name `vsock:...`).
    return None


def _watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Half of `$WATCHDOG_USEC` in seconds, as sd_watchdog_enabled(3) advises, or None."""
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
        # The variables may have been inherited from a process that systemd watches: they are
        # ours only when the pid matches.
        if "WATCHDOG_PID" in environ and int(environ["WATCHDOG_PID"]) != pid:
            return None
    except ValueError:
        return None
    if usec <= 0:
        return None
    return usec / 2 / 1_000_000
