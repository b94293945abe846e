"""The real `npuwatch agent` process on a journal with a damaged segment: it starts, keeps
journaling, and its console sink ships every record and event of the intact segments, names the
damaged one once, and neither dies nor loops; a damaged newest segment (the one a hard reset
hits) is set aside at the start and the rest is served (RELIABILITY.md, row 16)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.agent.console_agent import RunningAgent
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines
from tests.journal.damaged_journal import (
    DAMAGES,
    PART_DAMAGES,
    damage_segment,
    event_lines_of,
    lines_of,
    page_overwritten,
    write_journal,
)
from tests.journal.journal_builder import JournalContents

NEW_LINES = [plog_line(7100, number, text="written while the agent runs") for number in range(40)]

NO_FILE = {
    "a folder",
    "a FIFO",
    "a link",
    "a FIFO for its log",
    "a folder for its shared memory",
}
"""Damages that leave no regular file in the segment's place, or beside it for SQLite."""

NEWEST_DAMAGES = {
    "overwritten with garbage": DAMAGES["overwritten with garbage"],
    "empty": DAMAGES["empty"],
    "a folder": DAMAGES["a folder"],
    "a FIFO": DAMAGES["a FIFO"],
    "a page of its blocks": page_overwritten("blocks"),
}


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JournalContents]:
    directory = tmp_path_factory.mktemp("intact") / "journal"
    return directory, write_journal(directory)


def run_agent_on(
    tmp_path: Path, intact: tuple[Path, JournalContents], sequence: int, damage: str
) -> tuple[RunningAgent, Path]:
    """The agent started on a copy of the journal whose segment `sequence` has `damage`; the
    agent, and the damaged segment's path."""
    journal = tmp_path / "state" / "journal"
    shutil.copytree(intact[0], journal)
    damages = {**DAMAGES, **NEWEST_DAMAGES}
    damaged = damage_segment(journal, sequence, damages[damage])
    return RunningAgent(tmp_path, from_the_start=True), damaged


def expected_console(
    contents: JournalContents, segments: set[int], event_segments: set[int] | None = None
) -> Counter[str]:
    events = event_lines_of(contents, segments if event_segments is None else event_segments)
    return Counter(lines_of(contents, segments) + events + NEW_LINES)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_the_console_ships_the_intact_segments_and_the_new_records_past_a_damaged_old_one(
    tmp_path: Path, intact: tuple[Path, JournalContents], damage: str
) -> None:
    agent, damaged = run_agent_on(tmp_path, intact, 2, damage)
    try:
        append(plog_path(agent.logs, 7100), NEW_LINES)
        # Damage to its blocks alone leaves the segment's events to be shipped.
        events = {1, 2, 3} if damage in PART_DAMAGES else {1, 3}
        expected = expected_console(intact[1], {1, 3}, events)
        wait_until(lambda: expected <= Counter(agent.printed()), 60)
        assert agent.process.poll() is None, "the agent is still running"
    finally:
        code = agent.stop()

    assert code == 0
    assert Counter(agent.printed()) == expected  # every line once: no loop, no repeat
    naming = [line for line in agent.logged() if str(damaged) in line]
    assert len(naming) == 1, agent.logged()
    if damage in NO_FILE:  # what is no regular file is set aside when the agent starts
        assert naming[0].startswith(f"npuwatch: ERROR journal segment {damaged} is unreadable")
    else:  # a file is left where it is, and read around
        assert naming[0].startswith(f"npuwatch: WARNING journal segment {damaged} ")
    assert "Traceback" not in agent.stderr.read_text(encoding="utf-8")
    assert journal_lines(agent.state / "journal") >= Counter(NEW_LINES)  # it kept journaling


@pytest.mark.parametrize("damage", list(NEWEST_DAMAGES))
def test_a_damaged_newest_segment_is_set_aside_at_the_start_and_the_rest_is_served(
    tmp_path: Path, intact: tuple[Path, JournalContents], damage: str
) -> None:
    agent, damaged = run_agent_on(tmp_path, intact, 3, damage)
    try:
        append(plog_path(agent.logs, 7100), NEW_LINES)
        expected = expected_console(intact[1], {1, 2})
        wait_until(lambda: expected <= Counter(agent.printed()), 60)
    finally:
        code = agent.stop()

    assert code == 0
    assert Counter(agent.printed()) == expected
    naming = [line for line in agent.logged() if str(damaged) in line]
    assert len(naming) == 1, agent.logged()
    assert naming[0].startswith(f"npuwatch: ERROR journal segment {damaged} is unreadable (")
    assert f"moved to {damaged.parent / 'quarantine'}/" in naming[0]
    assert not os.path.lexists(damaged)
    (aside,) = [
        path.name
        for path in (damaged.parent / "quarantine").iterdir()
        if not path.name.endswith(("-wal", "-shm"))
    ]
    assert aside.startswith("segment-00000003.db.")
