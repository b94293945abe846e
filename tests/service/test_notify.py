"""The systemd notify protocol against real datagram sockets, and the watchdog heartbeat."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import pytest

from npuwatch.service.notify import (
    HEARTBEAT_THREAD_NAME,
    Heartbeat,
    SystemdNotifier,
    WatchdogNotifier,
)

READ_TIMEOUT = 10.0
"""Seconds to wait for a datagram: generous, since a loaded CI machine must not fail a test."""

BEAT = 0.05


@pytest.fixture
def path_socket(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    """A datagram socket bound in the test's folder, standing in for systemd's, and its name."""
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(path))
        receiver.settimeout(READ_TIMEOUT)
        yield str(path), receiver


@pytest.fixture
def abstract_socket() -> Iterator[tuple[str, socket.socket]]:
    """A datagram socket in the abstract namespace, and its name as $NOTIFY_SOCKET writes it."""
    name = f"npuwatch-test-{secrets.token_hex(8)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind("\0" + name)
        receiver.settimeout(READ_TIMEOUT)
        yield "@" + name, receiver


@pytest.fixture
def notifier(path_socket: tuple[str, socket.socket]) -> Iterator[SystemdNotifier]:
    with SystemdNotifier.from_environ({"NOTIFY_SOCKET": path_socket[0]}) as notifier:
        yield notifier


def receive(receiver: socket.socket) -> str:
    return receiver.recv(4096).decode()


def drain(receiver: socket.socket) -> list[str]:
    """Every datagram already queued, without waiting for more."""
    messages = []
    receiver.setblocking(False)
    try:
        while True:
            messages.append(receive(receiver))
    except BlockingIOError:
        return messages
    finally:
        receiver.settimeout(READ_TIMEOUT)


# The notifier


def test_ready_sends_ready_and_the_status_in_one_datagram(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.ready("tailing 12 files")
    assert receive(path_socket[1]) == "READY=1\nSTATUS=tailing 12 files"


def test_ready_without_a_status_sends_only_ready(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.ready()
    assert receive(path_socket[1]) == "READY=1"


def test_watchdog_sends_watchdog_1(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.watchdog()
    assert receive(path_socket[1]) == "WATCHDOG=1"


def test_stopping_sends_stopping_1(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.stopping()
    assert notifier.stopping("draining 1200 records")
    assert receive(path_socket[1]) == "STOPPING=1"
    assert receive(path_socket[1]) == "STOPPING=1\nSTATUS=draining 1200 records"


def test_a_status_with_line_breaks_stays_one_status_line(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.status("sink down\nWATCHDOG=1")
    assert receive(path_socket[1]) == "STATUS=sink down WATCHDOG=1"


def test_notify_sends_the_assignments_it_is_given_in_order(
    notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    assert notifier.notify("RELOADING=1", "STATUS=reloading rules")
    assert receive(path_socket[1]) == "RELOADING=1\nSTATUS=reloading rules"


def test_notify_refuses_an_assignment_that_is_not_one_key_value_line(
    notifier: SystemdNotifier,
) -> None:
    with pytest.raises(ValueError, match="KEY=value"):
        notifier.notify("READY")
    with pytest.raises(ValueError, match="KEY=value"):
        notifier.notify("STATUS=a\nWATCHDOG=1")


def test_a_name_starting_with_at_reaches_an_abstract_socket(
    abstract_socket: tuple[str, socket.socket],
) -> None:
    name, receiver = abstract_socket
    with SystemdNotifier.from_environ({"NOTIFY_SOCKET": name}) as notifier:
        assert notifier.enabled
        assert notifier.ready("up")
        assert notifier.watchdog()
    assert receive(receiver) == "READY=1\nSTATUS=up"
    assert receive(receiver) == "WATCHDOG=1"


def test_without_notify_socket_every_call_is_a_no_op_that_returns_false() -> None:
    with SystemdNotifier.from_environ({}) as notifier:
        assert not notifier.enabled
        assert not notifier.ready("up")
        assert not notifier.status("busy")
        assert not notifier.watchdog()
        assert not notifier.stopping()
        assert not notifier.notify("READY=1")


@pytest.mark.parametrize("value", ["", "@", "relative/notify.sock", "vsock:2:1234"])
def test_a_notify_socket_that_is_no_unix_socket_address_disables_the_notifier(
    value: str,
) -> None:
    with SystemdNotifier.from_environ({"NOTIFY_SOCKET": value}) as notifier:
        assert not notifier.enabled
        assert not notifier.ready()


def test_a_socket_that_never_existed_makes_notify_return_false(tmp_path: Path) -> None:
    with SystemdNotifier.from_environ({"NOTIFY_SOCKET": str(tmp_path / "none.sock")}) as notifier:
        assert notifier.enabled
        assert not notifier.ready()


def test_a_vanished_socket_makes_notify_return_false_and_a_new_one_is_found_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notify.sock"
    with SystemdNotifier.from_environ({"NOTIFY_SOCKET": str(path)}) as notifier:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as first:
            first.bind(str(path))
            first.settimeout(READ_TIMEOUT)
            assert notifier.watchdog()
            assert receive(first) == "WATCHDOG=1"
        path.unlink()

        assert not notifier.watchdog()
        assert not notifier.watchdog()

        # systemd re-executed: a new socket at the same path.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as second:
            second.bind(str(path))
            second.settimeout(READ_TIMEOUT)
            assert notifier.watchdog()
            assert receive(second) == "WATCHDOG=1"


def test_a_closed_notifier_sends_nothing(
    path_socket: tuple[str, socket.socket],
) -> None:
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": path_socket[0]})
    assert notifier.watchdog()
    notifier.close()
    notifier.close()
    assert not notifier.watchdog()
    assert drain(path_socket[1]) == ["WATCHDOG=1"]


def test_watchdog_usec_gives_half_the_interval_in_seconds() -> None:
    notifier = SystemdNotifier.from_environ({"WATCHDOG_USEC": "2000000"})
    assert notifier.watchdog_interval == 1.0


def test_watchdog_pid_of_this_process_keeps_the_watchdog() -> None:
    environ = {"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid())}
    assert SystemdNotifier.from_environ(environ).watchdog_interval == 30.0
    assert SystemdNotifier.from_environ(environ, pid=os.getpid()).watchdog_interval == 30.0


def test_watchdog_pid_of_another_process_means_the_watchdog_is_not_ours() -> None:
    environ = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert SystemdNotifier.from_environ(environ).watchdog_interval is None


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"WATCHDOG_USEC": ""},
        {"WATCHDOG_USEC": "0"},
        {"WATCHDOG_USEC": "-5"},
        {"WATCHDOG_USEC": "soon"},
        {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "not-a-pid"},
    ],
)
def test_without_a_usable_watchdog_usec_there_is_no_watchdog_interval(
    environ: dict[str, str],
) -> None:
    assert SystemdNotifier.from_environ(environ).watchdog_interval is None


# The heartbeat


class RecordingNotifier:
    """A notifier that keeps what it was asked to send, and can refuse to deliver."""

    def __init__(self, *, delivers: bool = True) -> None:
        self.delivers = delivers
        self.messages: list[str] = []

    def watchdog(self) -> bool:
        self.messages.append("WATCHDOG=1")
        return self.delivers

    def status(self, text: str) -> bool:
        self.messages.append("STATUS=" + text)
        return self.delivers


class Workers:
    """Worker threads that run until released, so a test decides when one dies."""

    def __init__(self, *names: str) -> None:
        self._release = {name: threading.Event() for name in names}
        self.threads = [
            threading.Thread(target=self._release[name].wait, name=name) for name in names
        ]
        for thread in self.threads:
            thread.start()

    def end(self, name: str) -> None:
        self._release[name].set()
        for thread in self.threads:
            if thread.name == name:
                thread.join()

    def end_all(self) -> None:
        for name in self._release:
            self.end(name)

    def __call__(self) -> Sequence[threading.Thread]:
        return self.threads


@pytest.fixture
def workers() -> Iterator[Workers]:
    started = Workers("tailer", "shipper")
    yield started
    started.end_all()


class MakeHeartbeat(Protocol):
    def __call__(
        self,
        notifier: WatchdogNotifier,
        workers: Callable[[], Sequence[threading.Thread]],
        interval: float = BEAT,
    ) -> Heartbeat: ...


@pytest.fixture
def heartbeats() -> Iterator[MakeHeartbeat]:
    """Makes heartbeats that are stopped after the test even when it fails: the thread is not a
    daemon, so a leaked one would keep pytest from exiting."""
    made: list[Heartbeat] = []

    def make(
        notifier: WatchdogNotifier,
        workers: Callable[[], Sequence[threading.Thread]],
        interval: float = BEAT,
    ) -> Heartbeat:
        heartbeat = Heartbeat(notifier, workers, interval)
        made.append(heartbeat)
        return heartbeat

    yield make
    for heartbeat in made:
        heartbeat.stop()


def heartbeat_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == HEARTBEAT_THREAD_NAME]


def test_a_beat_pings_the_watchdog_when_every_worker_is_alive(workers: Workers) -> None:
    notifier = RecordingNotifier()
    heartbeat = Heartbeat(notifier, workers, interval=BEAT)
    assert heartbeat.beat()
    assert heartbeat.beat()
    assert notifier.messages == ["WATCHDOG=1", "WATCHDOG=1"]


def test_a_beat_with_a_dead_worker_reports_it_once_and_never_pings(workers: Workers) -> None:
    notifier = RecordingNotifier()
    heartbeat = Heartbeat(notifier, workers, interval=BEAT)
    workers.end("shipper")
    assert not heartbeat.beat()
    assert not heartbeat.beat()
    assert not heartbeat.beat()
    assert notifier.messages == ["STATUS=worker thread shipper died"]


def test_each_dead_worker_is_reported_once(workers: Workers) -> None:
    notifier = RecordingNotifier()
    heartbeat = Heartbeat(notifier, workers, interval=BEAT)
    workers.end("shipper")
    heartbeat.beat()
    workers.end("tailer")
    heartbeat.beat()
    heartbeat.beat()
    assert notifier.messages == [
        "STATUS=worker thread shipper died",
        "STATUS=worker thread tailer died",
    ]


def test_a_report_that_systemd_did_not_take_is_sent_again(workers: Workers) -> None:
    notifier = RecordingNotifier(delivers=False)
    heartbeat = Heartbeat(notifier, workers, interval=BEAT)
    workers.end("tailer")
    heartbeat.beat()
    notifier.delivers = True
    heartbeat.beat()
    heartbeat.beat()
    assert notifier.messages == ["STATUS=worker thread tailer died"] * 2


def test_pings_resume_when_the_workers_are_all_alive_again(workers: Workers) -> None:
    notifier = RecordingNotifier()
    current = list(workers.threads)
    heartbeat = Heartbeat(notifier, lambda: current, interval=BEAT)
    workers.end("tailer")
    assert not heartbeat.beat()
    current[:] = [thread for thread in current if thread.is_alive()]
    assert heartbeat.beat()
    assert notifier.messages == ["STATUS=worker thread tailer died", "WATCHDOG=1"]


@pytest.mark.parametrize("interval", [0.0, -1.0, float("nan"), float("inf")])
def test_a_heartbeat_needs_a_positive_interval(interval: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        Heartbeat(RecordingNotifier(), list, interval=interval)


def test_a_heartbeat_starts_only_once(workers: Workers, heartbeats: MakeHeartbeat) -> None:
    heartbeat = heartbeats(RecordingNotifier(), workers)
    heartbeat.start()
    with pytest.raises(RuntimeError, match="only once"):
        heartbeat.start()


def test_stop_before_start_and_twice_is_harmless(workers: Workers) -> None:
    heartbeat = Heartbeat(RecordingNotifier(), workers, interval=BEAT)
    heartbeat.stop()
    heartbeat.stop()
    assert heartbeat_threads() == []


def test_the_heartbeat_pings_repeatedly_while_two_workers_live(
    workers: Workers,
    notifier: SystemdNotifier,
    path_socket: tuple[str, socket.socket],
    heartbeats: MakeHeartbeat,
) -> None:
    heartbeat = heartbeats(notifier, workers)
    heartbeat.start()
    assert [receive(path_socket[1]) for _ in range(5)] == ["WATCHDOG=1"] * 5


def test_after_a_worker_dies_the_heartbeat_names_it_once_and_stops_pinging(
    workers: Workers,
    notifier: SystemdNotifier,
    path_socket: tuple[str, socket.socket],
    heartbeats: MakeHeartbeat,
) -> None:
    beats = 0
    beaten = threading.Condition()

    def counted_workers() -> Sequence[threading.Thread]:
        nonlocal beats
        with beaten:
            beats += 1
            beaten.notify_all()
        return workers()

    heartbeat = heartbeats(notifier, counted_workers)
    heartbeat.start()
    assert receive(path_socket[1]) == "WATCHDOG=1"

    workers.end("shipper")
    before = []
    while (message := receive(path_socket[1])) != "STATUS=worker thread shipper died":
        before.append(message)
    assert set(before) <= {"WATCHDOG=1"}

    # Counting beats, not seconds: several more checks happen after the report.
    with beaten:
        target = beats + 5
        assert beaten.wait_for(lambda: beats >= target, timeout=READ_TIMEOUT)
    heartbeat.stop()
    assert drain(path_socket[1]) == []


def test_stop_joins_the_heartbeat_thread(
    workers: Workers,
    notifier: SystemdNotifier,
    path_socket: tuple[str, socket.socket],
    heartbeats: MakeHeartbeat,
) -> None:
    heartbeat = heartbeats(notifier, workers, interval=3600.0)
    heartbeat.start()
    assert receive(path_socket[1]) == "WATCHDOG=1"
    [thread] = heartbeat_threads()
    assert not thread.daemon

    # The interval is an hour: stop() must wake the wait, not sleep it out.
    heartbeat.stop()
    assert not thread.is_alive()
    assert heartbeat_threads() == []


def test_as_a_context_manager_the_heartbeat_runs_inside_the_block_only(
    workers: Workers, notifier: SystemdNotifier, path_socket: tuple[str, socket.socket]
) -> None:
    with Heartbeat(notifier, workers, interval=3600.0):
        assert receive(path_socket[1]) == "WATCHDOG=1"
        assert len(heartbeat_threads()) == 1
    assert heartbeat_threads() == []
