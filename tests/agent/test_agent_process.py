"""The real `npuwatch agent` process: the systemd notify protocol, signals, and kill -9.

Each test starts the agent as a process on a temporary log tree, with a datagram socket of its
own as $NOTIFY_SOCKET, and checks what systemd would see and what the journal holds.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines as journaled_lines

pytestmark = pytest.mark.integration

FAULTY_AGENT = Path(__file__).with_name("faulty_agent.py")
REPOSITORY = Path(__file__).resolve().parents[2]


class NotifySocket:
    """What systemd's notify socket would receive."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(str(path))
        self._socket.settimeout(0.2)
        self.messages: list[str] = []

    def receive(self, timeout: float) -> list[str]:
        """Every datagram that arrives within `timeout` seconds (also kept in `messages`)."""
        deadline = time.monotonic() + timeout
        got = []
        while time.monotonic() < deadline:
            try:
                got.append(self._socket.recv(4096).decode())
            except TimeoutError:
                continue
        self.messages += got
        return got

    def wait_for(self, assignment: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(assignment in message.split("\n") for message in self.receive(0.2)):
                return
        raise AssertionError(f"{assignment} not received within {timeout} s: {self.messages}")

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    # AF_UNIX paths are limited to 108 bytes: pytest's tmp_path may be longer.
    path = Path(f"/tmp/npuwatch-notify-{os.getpid()}-{random.randrange(1 << 30)}")
    sock = NotifySocket(path)
    yield sock
    sock.close()
    path.unlink(missing_ok=True)


def start_agent(
    tmp_path: Path,
    notify: NotifySocket | None = None,
    fault: str = "none",
    extra: tuple[str, ...] = (),
    watchdog_usec: int | None = None,
    settings: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """The agent on `tmp_path/logs`, with fast timings; `settings`: NPUWATCH_* overrides."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NPUWATCH_")}
    # This tree's package first (not an installed one), and the repository for `tests`.
    env["PYTHONPATH"] = os.pathsep.join([str(REPOSITORY / "src"), str(REPOSITORY)])
    env["NPUWATCH_SOURCES__RESCAN_INTERVAL"] = "300ms"
    env["NPUWATCH_SOURCES__IDLE_FLUSH"] = "500ms"
    env["NPUWATCH_JOURNAL__COMMIT_INTERVAL"] = "50ms"
    env["NPUWATCH_AGENT__HOST_NAME"] = "node-1"
    env["NPUWATCH_SINKS__PROMETHEUS__LISTEN"] = "127.0.0.1:0"
    env["NPUWATCH_CONFIG"] = str(tmp_path / "npuwatch.toml")
    if not (tmp_path / "npuwatch.toml").exists():
        (tmp_path / "npuwatch.toml").write_text("", encoding="utf-8")
    env.update(settings or {})
    if notify is not None:
        env["NOTIFY_SOCKET"] = str(notify.path)
    if watchdog_usec is not None:
        env["WATCHDOG_USEC"] = str(watchdog_usec)
    command = [
        sys.executable,
        str(FAULTY_AGENT),
        fault,
        "agent",
        "--root",
        str(tmp_path / "logs"),
        "--state-directory",
        str(tmp_path / "state"),
        *extra,
    ]
    (tmp_path / "logs").mkdir(exist_ok=True)
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
    )


def journal_lines(tmp_path: Path) -> Counter[str]:
    return journaled_lines(tmp_path / "state" / "journal")


def stop(process: subprocess.Popen[bytes], timeout: float = 30.0) -> tuple[int, str]:
    """SIGTERM, once the agent handles it (a signal during the interpreter's start-up, before
    the command has run, ends it as any Python program: killed, not stopped), and its end."""
    catching_by = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < catching_by:
        if catches_sigterm(process.pid):
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err.decode()


def catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler of its own for SIGTERM (its SigCgt mask)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:  # gone
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def test_the_agent_tells_systemd_ready_pings_the_watchdog_and_says_stopping(
    tmp_path: Path, notify: NotifySocket
) -> None:
    logs = tmp_path / "logs"
    lines = [plog_line(100, number) for number in range(2000)]
    append(plog_path(logs, 100), lines)
    process = start_agent(tmp_path, notify, watchdog_usec=600_000)
    try:
        notify.wait_for("READY=1")
        pings = [m for m in notify.receive(2.0) if "WATCHDOG=1" in m.split("\n")]
        assert len(pings) >= 3  # every 0.3 s for 2 s (half of WatchdogSec)
        wait_until(lambda: not (Counter(lines) - journal_lines(tmp_path)))  # idle flush
    finally:
        code, err = stop(process)
    notify.receive(0.5)
    assert any("STOPPING=1" in m.split("\n") for m in notify.messages), notify.messages
    assert code == 0, err
    ready = next(m for m in notify.messages if "READY=1" in m.split("\n"))
    assert "STATUS=following 1 files" in ready.split("\n")
    assert journal_lines(tmp_path) == Counter(lines)


def test_a_dead_worker_thread_stops_the_watchdog_pings_and_the_agent_exits_1(
    tmp_path: Path, notify: NotifySocket
) -> None:
    logs = tmp_path / "logs"
    process = start_agent(tmp_path, notify, fault="dead-rules", watchdog_usec=400_000)
    try:
        notify.wait_for("READY=1")
        notify.wait_for("WATCHDOG=1")
        append(plog_path(logs, 200), [plog_line(200, 0, "ERROR", "KILL-RULES")])
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    notify.receive(0.5)
    assert process.returncode == 1
    assert "worker thread npuwatch-rules died" in err.decode()
    after_death = notify.messages[
        next(i for i, m in enumerate(notify.messages) if "worker thread" in m) :
    ]
    assert not any("WATCHDOG=1" in m.split("\n") for m in after_death[1:])


def test_sigterm_drains_everything_read_and_a_restart_reads_on_without_repeats(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    first = [plog_line(300, number) for number in range(20_000)]
    append(plog_path(logs, 300), first)
    process = start_agent(tmp_path)
    wait_until(lambda: len(journal_lines(tmp_path)) > 100)
    code, err = stop(process)
    assert code == 0, err
    # What was read is committed, the record still being assembled included; the rest is read
    # by the next start, from the committed offset.
    assert not journal_lines(tmp_path) - Counter(first)
    second = [plog_line(300, number) for number in range(20_000, 21_000)]
    append(plog_path(logs, 300), second)
    process = start_agent(tmp_path)
    wait_until(lambda: not (Counter(first + second) - journal_lines(tmp_path)))
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(first + second)


def test_a_second_sigterm_exits_at_once_and_loses_nothing(tmp_path: Path) -> None:
    """The drain is made slow (each commit takes a second); the second signal does not wait
    for it, and the next start reads what was not committed."""
    logs = tmp_path / "logs"
    lines = [plog_line(400, number) for number in range(300_000)]
    append(plog_path(logs, 400), lines)
    process = start_agent(tmp_path, fault="slow-commit")
    wait_until(lambda: len(journal_lines(tmp_path)) > 0, timeout=30)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    assert time.monotonic() - started < 5.0
    assert process.returncode == 128 + signal.SIGTERM
    process = start_agent(tmp_path)
    wait_until(lambda: not (Counter(lines) - journal_lines(tmp_path)))
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines)


def test_kill_9_at_random_points_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    randomness = random.Random(20261129)
    written: list[str] = []
    number = 0
    for round_number in range(6):
        process = start_agent(tmp_path)
        path = plog_path(logs, 500, stamp=round_number // 2)  # rotate every other round
        deadline = time.monotonic() + randomness.uniform(1.0, 3.0)
        while time.monotonic() < deadline:
            batch = [plog_line(500, number + index) for index in range(500)]
            number += len(batch)
            append(path, batch)
            written += batch
            time.sleep(randomness.uniform(0.0, 0.05))
        process.kill()  # SIGKILL: no drain, no last commit
        process.communicate()
    process = start_agent(tmp_path)
    wait_until(lambda: not (Counter(written) - journal_lines(tmp_path)), timeout=60)
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(written)


def rule_pack(rule_id: str, word: str) -> str:
    """A pack of one rule matching `word` in the message, with the example it must match."""
    example = f"[INFO] GE(1,p):2025-09-14-09:00:00.000.000 [a.cc:1] {word} 1"
    return (
        "pack: site\n"
        "rules:\n"
        f"  - id: {rule_id}\n"
        f"    title: {word} seen\n"
        f"    when: message ~ /{word}/\n"
        "    severity: warning\n"
        "    layer: application\n"
        "    category: test\n"
        "    advice: Nothing to do; a test rule.\n"
        "    examples:\n"
        f"      match: ['{example}']\n"
    )


def test_sighup_reloads_the_rules_without_losing_the_position(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    rules = tmp_path / "rules.yaml"
    (tmp_path / "npuwatch.toml").write_text(
        f'[rules]\npaths = ["{rules}"]\nreload_interval = "1h"\n', encoding="utf-8"
    )
    rules.write_text(rule_pack("site.placeholder", "never-seen-anywhere"), encoding="utf-8")
    path = plog_path(logs, 600)
    before = [plog_line(600, number, "INFO", "canary") for number in range(100)]
    append(path, before)
    process = start_agent(tmp_path)
    wait_until(lambda: not (Counter(before[:-1]) - journal_lines(tmp_path)))
    rules.write_text(rule_pack("site.canary", "canary"), encoding="utf-8")
    process.send_signal(signal.SIGHUP)
    time.sleep(1.5)
    after = [plog_line(600, number, "INFO", "canary") for number in range(100, 110)]
    append(path, after)
    wait_until(lambda: not (Counter(before + after) - journal_lines(tmp_path)))
    code, err = stop(process)
    assert code == 0, err
    assert "rules reloaded" in err
    assert journal_lines(tmp_path) == Counter(before + after)
    result = subprocess.run(
        [sys.executable, "-m", "npuwatch", "grep", "--journal", str(tmp_path / "state" / "journal"),
         "--events", "--json"],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert '"site.canary"' in result.stdout


# --- defects of a fault audit, with the real agent: each failed before its fix -------------


def test_a_file_created_empty_and_written_a_second_later_is_journaled_without_a_rescan(
    tmp_path: Path,
) -> None:
    """`: > a.log; sleep 1; echo LINE >> a.log`, with the rescan an hour away."""
    logs = tmp_path / "logs"
    path = plog_path(logs, 3000)
    process = start_agent(tmp_path, settings={"NPUWATCH_SOURCES__RESCAN_INTERVAL": "1h"})
    try:
        time.sleep(1.0)  # started: the first rescan has been
        path.write_bytes(b"")
        time.sleep(1.0)
        lines = [plog_line(3000, 0)]
        append(path, lines)
        wait_until(lambda: journal_lines(tmp_path) == Counter(lines), timeout=20)
    finally:
        code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines)


def test_sigterm_commits_the_last_line_of_each_file_so_a_deletion_while_stopped_loses_none(
    tmp_path: Path,
) -> None:
    """Ten lines, SIGTERM: ten in the journal; the file deleted, the agent started again:
    still ten, and nothing said to be lost."""
    logs = tmp_path / "logs"
    path = plog_path(logs, 3100)
    lines = [plog_line(3100, number) for number in range(10)]
    append(path, lines)
    hold = {"NPUWATCH_SOURCES__IDLE_FLUSH": "1h"}  # the last record waits for what follows
    process = start_agent(tmp_path, settings=hold)
    wait_until(lambda: journal_lines(tmp_path) == Counter(lines[:9]))
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines)
    path.unlink()
    process = start_agent(tmp_path, settings=hold)
    time.sleep(2.0)
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines)
    assert "deleted before it was read" not in err


def test_a_reused_inode_starting_with_the_same_bytes_is_read_whole_by_the_next_start(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    path = plog_path(logs, 3200)
    banner = [plog_line(3200, number) for number in range(5)]  # past the 256-byte fingerprint
    first = [*banner, *(plog_line(3200, number) for number in range(5, 100))]
    append(path, first)
    process = start_agent(tmp_path)
    wait_until(lambda: journal_lines(tmp_path) == Counter(first))
    code, err = stop(process)
    assert code == 0, err
    inode = path.stat().st_ino
    second = [*banner, *(plog_line(3201, number) for number in range(200))]
    with path.open("r+", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in second))
        handle.truncate()
    assert path.stat().st_ino == inode
    process = start_agent(tmp_path)
    wait_until(lambda: journal_lines(tmp_path) == Counter(first + second))
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(first + second)


def test_a_second_agent_on_the_same_state_directory_refuses_naming_the_first(
    tmp_path: Path, notify: NotifySocket
) -> None:
    """Two agents on one state directory would journal every line twice and fight over the
    cursors: the second refuses (exit 2, one line naming the first's pid), the lines are
    journaled once, and a `kill -9` of the first leaves no stale lock behind."""
    logs = tmp_path / "logs"
    lines = [plog_line(100, number) for number in range(2000)]
    append(plog_path(logs, 100), lines)
    first = start_agent(tmp_path, notify)
    try:
        notify.wait_for("READY=1")
        second = start_agent(tmp_path)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2
        refusal = [line for line in err.decode().splitlines() if line.strip()]
        assert len(refusal) == 1, refusal
        assert f"in use by another npuwatch agent (pid {first.pid})" in refusal[0]
        more = [plog_line(100, number) for number in range(2000, 2500)]
        append(plog_path(logs, 100), more)
        wait_until(lambda: not (Counter(lines + more) - journal_lines(tmp_path)))
        assert journal_lines(tmp_path) == Counter(lines + more)
    finally:
        first.kill()
        first.communicate(timeout=30)
    third = start_agent(tmp_path)  # the lock went with the killed process
    try:
        time.sleep(2.0)
        assert third.poll() is None
    finally:
        code, err = stop(third)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines + more)
