"""The real agent process restarted, stopped or killed over and over: the journal it leaves.

A restart goes on writing the newest segment (before, every start opened one: 10 restarts made
10 segments, and an event's context a few segments back was given as "removed"), and a record
read again after a `kill -9` never journals its event twice (before, each replay journaled the
same events again in the next segment, and a console or an alert receiver said them twice).
Exact counts: lines by content, events by row and by id.
"""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from npuwatch.journal.store import list_segments
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.test_agent_process import journal_lines, start_agent, stop

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
