"""The real agent process restarted, stopped or killed over and over: the journal it leaves.

A restart goes on writing the newest segment (before, every start opened one: 10 restarts made
10 segments, and an event's context a few segments back was given as "removed"), and a record
read again after a `kill -9` never journals its event twice (before, each replay journaled the
same events again in the next segment, and a console or an alert receiver said them twice).
Exact counts: lines by content, events by row and by id.
"""

from __future__ import annotations

import signal
import socket
import sqlite3
import time
import urllib.request
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from npuwatch.journal.store import list_segments
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines as journal_lines_of
from tests.agent.test_agent_process import journal_lines, start_agent, stop
from tests.journal.full_disk import fill, small_tmpfs

pytestmark = pytest.mark.integration

ERROR_EVERY = 500


def numbered_lines(pid: int, first: int, count: int) -> list[str]:
    return [
        plog_line(pid, n, "ERROR" if n % ERROR_EVERY == 0 else "INFO", "notify wait timeout")
        for n in range(first, first + count)
    ]


def event_ids(journal: Path) -> list[str]:
    """The id of every event row of every segment (a repeat counts twice)."""
    ids: list[str] = []
    for _, path in list_segments(journal):
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            ids += [str(row[0]) for row in db.execute("SELECT id FROM events")]
    return ids


def test_restarts_write_on_in_the_same_segment(tmp_path: Path) -> None:
    path = plog_path(tmp_path / "logs", 700)
    written: list[str] = []
    for restart in range(8):
        lines = numbered_lines(700, restart * 1000, 1000)
        append(path, lines)
        written += lines
        expected = Counter(written)
        process = start_agent(tmp_path)
        wait_until(lambda expected=expected: not (expected - journal_lines(tmp_path)))
        code, err = stop(process)
        assert code == 0, err
    journal = tmp_path / "state" / "journal"
    assert [p.name for _, p in list_segments(journal)] == ["segment-00000001.db"]
    assert journal_lines(tmp_path) == Counter(written)
    ids = event_ids(journal)
    assert ids and len(ids) == len(set(ids))


def test_kill_9_while_journaling_journals_each_event_once(tmp_path: Path) -> None:
    files, lines = 4, 6000
    written: list[str] = []
    for pid in range(900, 900 + files):
        numbered = numbered_lines(pid, 0, lines)
        append(plog_path(tmp_path / "logs", pid), numbered)
        written += numbered
    process = start_agent(tmp_path)
    kills = 0
    try:
        while kills < 3:
            journaled = sum(journal_lines(tmp_path).values())
            if journaled > (kills + 1) * files * lines // 5:
                process.send_signal(signal.SIGKILL)
                process.communicate()
                kills += 1
                process = start_agent(tmp_path)
        wait_until(lambda: not (Counter(written) - journal_lines(tmp_path)))
    finally:
        code, err = stop(process)
    assert kills == 3, "the journal was complete before the agent could be killed three times"
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(written)
    ids = event_ids(tmp_path / "state" / "journal")
    # Each rule event once, however often the records around it were read again.
    assert ids and sorted(ids) == sorted(set(ids))


@pytest.mark.parametrize("rotation", ["renamed", "deleted", "next-file"])
def test_the_last_record_of_a_rotated_file_is_journaled_at_once(
    tmp_path: Path, rotation: str
) -> None:
    """A record is held until the next line shows it has no continuation lines; a file renamed,
    deleted, or followed by the next file of its process (CANN's rotation: a later stamp in the
    name) gets no next line. Its last record is journaled without waiting for the idle flush
    (30 s here), so that a `kill -9` after the rotation, with the file gone by the restart,
    loses nothing."""
    path = plog_path(tmp_path / "logs", 800)
    lines = numbered_lines(800, 0, 100)
    append(path, lines)
    rotated = path.with_name(path.name + ".1")
    process = start_agent(tmp_path, settings={"NPUWATCH_SOURCES__IDLE_FLUSH": "30s"})
    try:
        wait_until(lambda: sum(journal_lines(tmp_path).values()) == len(lines) - 1)
        if rotation == "renamed":
            path.rename(rotated)
        elif rotation == "deleted":
            path.unlink()
        else:
            append(plog_path(tmp_path / "logs", 800, stamp=1), numbered_lines(800, 100, 1))
        wait_until(lambda: journal_lines(tmp_path)[lines[-1]] == 1, timeout=5)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        rotated.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        process = start_agent(tmp_path)
        time.sleep(2)  # a rescan: the file's checkpoint is found with no file
    finally:
        code, err = stop(process)
    assert code == 0, err
    journaled = journal_lines(tmp_path)
    assert all(journaled[line] == 1 for line in lines), journaled


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = [line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")]
    assert values, f"{name} is not exported"
    return float(values[0])


def test_a_file_that_grew_and_went_while_the_agent_was_stopped_is_a_loss_said_out_loud(
    tmp_path: Path,
) -> None:
    path = plog_path(tmp_path / "logs", 600)
    before = numbered_lines(600, 0, 1000)
    append(path, before)
    process = start_agent(tmp_path)
    wait_until(lambda: journal_lines(tmp_path) == Counter(before))
    code, err = stop(process)
    assert code == 0, err
    append(path, numbered_lines(600, 1000, 20))  # written while the agent is stopped ...
    path.unlink()  # ... and gone before it starts again
    port = free_port()
    process = start_agent(
        tmp_path,
        extra=("--log-level", "WARNING"),
        settings={"NPUWATCH_SINKS__PROMETHEUS__LISTEN": f"127.0.0.1:{port}"},
    )
    try:
        wait_until(lambda: metric_or_none(port) == 1.0, timeout=30)
    finally:
        code, err = stop(process)
    assert code == 0, err
    said = [line for line in err.splitlines() if "deleted before it started again" in line]
    assert len(said) == 1 and path.name in said[0] and "not known" in said[0], err
    assert journal_lines(tmp_path) == Counter(before)


def metric_or_none(port: int) -> float | None:
    try:
        return metric(port, "npuwatch_files_deleted_while_stopped_total")
    except OSError:
        return None  # not listening yet


def test_a_start_on_a_full_disk_waits_for_room_and_then_journals_every_line_once(
    tmp_path: Path,
) -> None:
    """Before, a start on a full disk exited 2 (systemd restarted it every 5 s), and with a
    journal already there SQLite's "disk I/O error" had its sound segment set aside as damaged:
    its checkpoints lost, every file journaled again."""
    with small_tmpfs(tmp_path / "small-fs") as disk:
        state = disk / "state"
        path = plog_path(tmp_path / "logs", 500)
        first = numbered_lines(500, 0, 1000)
        append(path, first)
        # (the last --state-directory is the one the agent takes)
        process = start_agent(tmp_path, extra=("--state-directory", str(state)))
        wait_until(lambda: journaled(state) == Counter(first))
        code, err = stop(process)
        assert code == 0, err
        filler = fill(disk)
        second = numbered_lines(500, 1000, 1000)
        append(path, second)
        process = start_agent(tmp_path, extra=("--state-directory", str(state)))
        try:
            time.sleep(3)
            assert process.poll() is None, process.communicate()[1].decode()
            filler.unlink()
            wait_until(lambda: journaled(state) == Counter(first + second), timeout=30)
        finally:
            code, err = stop(process)
        assert code == 0, err
        assert "waiting for room" in err and "has room again" in err, err
        assert not (state / "journal" / "quarantine").exists()
        assert [p.name for _, p in list_segments(state / "journal")] == ["segment-00000001.db"]
        assert journaled(state) == Counter(first + second)


def journaled(state: Path) -> Counter[str]:
    return journal_lines_of(state / "journal")
