"""A full disk under the state directory with the console sink on: the real agent process keeps
running, its console thread stays alive, no temporary file is left, and once there is room
again the cursor is saved and every line is journaled and printed exactly once.

The disk is a real 1 MiB tmpfs (the tests run as root, as CI does); the log tree and the
console's output are elsewhere, as they are on a host whose /var/lib fills up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.journal.reader import JournalReader
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines
from tests.journal.full_disk import fill, small_tmpfs

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


class ConsoleAgent:
    """`npuwatch agent --console` as a process, its stdout and stderr in files off the disk."""

    def __init__(self, tmp_path: Path, state: Path, name: str) -> None:
        self.stdout = tmp_path / f"{name}.out"
        self.stderr = tmp_path / f"{name}.err"
        env = {key: value for key, value in os.environ.items() if not key.startswith("NPUWATCH_")}
        env.update(
            PYTHONPATH=str(REPOSITORY),
            NPUWATCH_CONFIG=os.devnull,
            NPUWATCH_SOURCES__RESCAN_INTERVAL="300ms",
            NPUWATCH_JOURNAL__COMMIT_INTERVAL="50ms",
            NPUWATCH_AGENT__HOST_NAME="node-1",
            NPUWATCH_DEVICES__ENABLED="false",
            NPUWATCH_SINKS__PROMETHEUS__LISTEN="127.0.0.1:0",
        )
        command = [sys.executable, "-m", "npuwatch", "agent", "--console"]
        command += ["--root", str(tmp_path / "logs"), "--state-directory", str(state)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=err)

    def printed(self) -> Counter[str]:
        return Counter(self.stdout.read_text(encoding="utf-8").splitlines())

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def saved_console_cursor(state: Path) -> list[int] | None:
    """The console's saved position in the journal's blocks (segment, row)."""
    try:
        cursor = json.loads((state / "cursors.json").read_text())["cursors"]["console"]
    except (FileNotFoundError, ValueError, KeyError):
        return None
    return list(cursor["blocks"])


def journal_end(journal: Path) -> list[int]:
    """The position of the journal's last block (there are no rule events in these tests)."""
    with JournalReader(journal) as reader:
        blocks, _, _ = reader.end()
    return [blocks.segment, blocks.row]


def test_a_full_state_disk_with_the_console_on_stops_nothing_and_loses_nothing(
    tmp_path: Path, disk: Path
) -> None:
    state, journal = disk / "state", disk / "state" / "journal"
    plog = plog_path(tmp_path / "logs", 4100)
    before = [plog_line(4100, n) for n in range(50)]
    during = [plog_line(4100, n) for n in range(50, 100)]
    agent = ConsoleAgent(tmp_path, state, "first")
    try:
        append(plog, before)
        wait_until(lambda: agent.printed() == Counter(before), 60)
        wait_until(lambda: saved_console_cursor(state) == journal_end(journal), 30)

        filler = fill(disk)
        append(plog, during)  # read, then held while the journal cannot commit
        cursor_refused = f"cannot write {state / 'cursors.json'}"
        wait_until(lambda: cursor_refused in agent.log() or agent.process.poll() is not None)
        time.sleep(3)  # a dead console thread ends the process within a second
        assert agent.process.poll() is None, agent.log()
        assert "died" not in agent.log()
        assert sorted(p.name for p in state.rglob("*.tmp")) == []
        assert agent.printed() == Counter(before)  # nothing new is committed meanwhile

        filler.unlink()
        wait_until(lambda: agent.printed() == Counter(before + during), 60)
        wait_until(lambda: saved_console_cursor(state) == journal_end(journal), 30)
        assert agent.stop() == 0
    finally:
        agent.kill()
    log = agent.log()
    assert log.count(cursor_refused) == 1, log
    assert log.count(f"{state / 'cursors.json'} is written again") == 1, log
    assert log.count("cannot write the journal") == 1, log
    assert agent.printed() == Counter(before + during)
    assert journal_lines(journal) == Counter(before + during)
    assert sorted(p.name for p in disk.rglob("*.tmp")) == []

    # The cursor saved after the outage holds: a restart prints only what is new.
    after = [plog_line(4100, n) for n in range(100, 110)]
    again = ConsoleAgent(tmp_path, state, "second")
    try:
        append(plog, after)
        wait_until(lambda: journal_lines(journal) == Counter(before + during + after), 60)
        wait_until(lambda: saved_console_cursor(state) == journal_end(journal), 30)
        assert again.stop() == 0
    finally:
        again.kill()
    assert again.printed() == Counter(after)
