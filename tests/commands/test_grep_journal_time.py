"""`npuwatch grep --journaled-since/--journaled-until`: by when the agent journaled a record or
an event, not by the time its line says (a backfill of old logs, a host whose clock is wrong)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from npuwatch.journal.segment import Segment
from npuwatch.journal.store import CommitBatch, Journal, list_segments
from tests.commands.test_grep_command import OTHER_PLOG, PLOG, grep, lines
from tests.journal.journal_builder import LogFile, commit_batches, rule_events_made

BACKFILLED_AT_S = 1_757_842_200.0
"""When the agent journaled the first half (2025-09-14 09:30:00 UTC)."""
LATER_S = BACKFILLED_AT_S + 3_600
"""...and the second half, an hour later; every line says 2025-09-14 09:30 all the same."""

FIRST = "[ERROR] HCCL(3300,python3):2025-09-14-09:30:02.402.855 [task_exception_handler.cc:947] [3303]notify wait timeout, error code E30009"
SECOND = "[ERROR] HCCL(3300,python3):2025-09-14-09:30:02.402.900 [task_exception_handler.cc:947] [3303]notify wait timeout, error code E30009"
INFO = "[INFO] GE(3300,python3):2025-09-14-09:30:03.000.000 [graph_builder.cc:180]3301 BuildGraph: done"


@pytest.fixture
def journal_dir(tmp_path: Path) -> Path:
    """Two plogs journaled an hour apart, their events with them: FIRST's, then SECOND's
    and INFO's."""
    batches = []
    for log in (LogFile(PLOG, "node-7", [FIRST]), LogFile(OTHER_PLOG, "node-7", [SECOND, INFO])):
        events, _ = rule_events_made([log])
        assert events  # (the notify wait timeout's, at least)
        (batch,) = commit_batches([log], 1, events)
        batches.append(batch)
    first, later = batches
    now = [BACKFILLED_AT_S]
    directory = tmp_path / "journal"
    journal = Journal(directory, clock=lambda: now[0])
    journal.open()
    try:
        journal.commit(first)
        now[0] = LATER_S
        journal.commit(later)
    finally:
        journal.close()
    return directory


def at(seconds: float) -> str:
    return f"@{seconds:.0f}"


@pytest.mark.parametrize(
    "question",
    [("--level", "ERROR"), ("--code", "E30009"), ("notify wait",)],
    ids=["from the index", "by code", "from the blocks"],
)
def test_journaled_since_finds_what_came_in_after_whatever_time_its_lines_say(
    journal_dir: Path, capsys: pytest.CaptureFixture[str], question: tuple[str, ...]
) -> None:
    since = "2025-09-14T10:00:00Z"  # after the first commit, before the second
    assert grep(journal_dir, *question, "--journaled-since", since) == 0
    assert capsys.readouterr().out.splitlines() == lines(OTHER_PLOG, SECOND)
    assert grep(journal_dir, *question, "--journaled-until", since) == 0
    assert capsys.readouterr().out.splitlines() == lines(PLOG, FIRST)
    # the log-time bounds see both: every line says 09:30
    assert grep(journal_dir, *question, "--since", since) == 1
    capsys.readouterr()


def test_journaled_bounds_include_their_ends(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moment = "2025-09-14T10:30:00Z"  # LATER_S exactly
    assert grep(journal_dir, "--journaled-since", moment, "--journaled-until", moment) == 0
    assert capsys.readouterr().out.splitlines() == lines(OTHER_PLOG, SECOND, INFO)


def test_events_are_found_by_when_they_were_journaled(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--events") == 0
    every = capsys.readouterr().out.splitlines()
    assert grep(journal_dir, "--events", "--journaled-since", "2025-09-14T10:00:00Z") == 0
    later = capsys.readouterr().out.splitlines()
    assert grep(journal_dir, "--events", "--journaled-until", "2025-09-14T10:00:00Z") == 0
    earlier = capsys.readouterr().out.splitlines()
    assert later and earlier
    assert sorted(later + earlier) == sorted(every)
    assert all(OTHER_PLOG in event for event in later)
    assert not any(OTHER_PLOG in event for event in earlier)


def test_a_segment_made_before_events_kept_their_journal_time_is_said_once(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ((_, path),) = list_segments(journal_dir)
    with sqlite3.connect(path) as db:  # as npuwatch 0.1 made it
        db.execute("ALTER TABLE events DROP COLUMN written_us")
    assert grep(journal_dir, "--events", "--journaled-since", "2025-09-14T10:00:00Z") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "npuwatch: 1 journal segment(s) made by npuwatch 0.1 do not keep when their events "
        "were journaled: their events are left out (their records are not)"
    ]
    # the records of that segment are found by their blocks' journal time all the same
    assert grep(journal_dir, "--level", "ERROR", "--journaled-since", "2025-09-14T10:00:00Z") == 0
    assert capsys.readouterr().out.splitlines() == lines(OTHER_PLOG, SECOND)


def test_a_segment_of_0_1_gets_the_column_when_the_agent_writes_on_in_it(tmp_path: Path) -> None:
    directory = tmp_path / "journal"
    journal = Journal(directory, clock=lambda: BACKFILLED_AT_S)
    journal.open()
    journal.commit(CommitBatch())
    journal.close()
    ((_, path),) = list_segments(directory)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE events DROP COLUMN written_us")
    Segment(path, 1).close()  # opened for writing, as the agent opens its newest segment
    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
    assert "written_us" in columns
