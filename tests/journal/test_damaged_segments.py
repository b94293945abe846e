"""Every reader of the journal on a journal whose middle segment is damaged, in every way and in
every table: what SQLite can still read is served, nothing else is lost, nothing raises, and the
damaged segment is named once when anything of it was left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.reader import JournalReader
from tests.journal.damaged_journal import (
    DAMAGES,
    INDEX_DAMAGES,
    SEGMENT_TABLES,
    damage_segment,
    lines_of,
    page_overwritten,
    readable_in_segment,
    reader_events,
    reader_lines,
    segment_of,
    write_journal,
)
from tests.journal.journal_builder import JournalContents

EVERY_DAMAGE = {
    **DAMAGES,
    **INDEX_DAMAGES,
    **{f"a page of {table}": page_overwritten(table) for table in SEGMENT_TABLES},
}


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JournalContents]:
    directory = tmp_path_factory.mktemp("intact") / "journal"
    return directory, write_journal(directory)


def events_of(contents: JournalContents, segment: int) -> list[str]:
    def segment_of_event(document: str) -> int:
        return segment_of(json.loads(document)["message"])

    return [row.document for row in contents.events if segment_of_event(row.document) == segment]


@pytest.mark.parametrize("damage", list(EVERY_DAMAGE))
def test_a_sink_gets_everything_sqlite_can_still_read_and_a_warning_for_what_it_cannot(
    intact: tuple[Path, JournalContents],
    tmp_path: Path,
    damage: str,
) -> None:
    directory = tmp_path / "journal"
    shutil.copytree(intact[0], directory)
    contents = intact[1]
    path = damage_segment(directory, 2, EVERY_DAMAGE[damage])
    lines, documents = readable_in_segment(path)

    said: list[str] = []
    notice = DamageNotice(said.append)  # one for both readers, as the agent's sinks share one

    found_lines = reader_lines(directory, notice)
    found_events = reader_events(directory, notice)

    expected = lines_of(contents, {1}) + lines + lines_of(contents, {3})
    assert found_lines == expected
    assert found_events == events_of(contents, 1) + documents + events_of(contents, 3)
    warnings = said
    assert len(warnings) <= 1
    assert all(warning.startswith(f"journal segment {path} ") for warning in warnings)
    if lines != lines_of(contents, {2}) or documents != events_of(contents, 2):
        assert len(warnings) == 1  # nothing is lost without a word


@pytest.mark.parametrize("damage", list(EVERY_DAMAGE))
def test_the_end_and_the_states_of_a_damaged_journal_are_read_without_an_error(
    intact: tuple[Path, JournalContents], tmp_path: Path, damage: str
) -> None:
    directory = tmp_path / "journal"
    shutil.copytree(intact[0], directory)
    damage_segment(directory, 2, EVERY_DAMAGE[damage])

    with JournalReader(directory) as reader:
        blocks, events, states = reader.end()
        assert (blocks.segment, events.segment, states.segment) == (3, 3, 3)
        assert reader.latest_states() == {}
        assert reader.state("any") is None
