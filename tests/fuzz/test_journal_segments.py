"""`npuwatch grep` on a journal with one damaged segment: it ends with its documented codes and
shows every record of the intact segments, each once (RELIABILITY row 16: the bad segment is
left aside, the rest is served)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given

from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import list_segments
from tests.commands.test_grep_command import journal_files
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.journal_damage import Damage, copy_journal, damage, damages
from tests.journal.journal_builder import write_journal

Key = tuple[str, int | None, str]
"""A record as grep's JSON names it: its file, its offset, its text."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[Key]]]:
    """A journal of three segments, and the records each segment holds."""
    directory = tmp_path_factory.mktemp("template") / "journal"
    write_journal(directory, journal_files(), runs=3, segments=3)
    by_segment: dict[int, list[Key]] = {}
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.blocks_after(position):
            position = page[-1][0]
            for at, block in page:
                by_segment.setdefault(at.segment, []).extend(
                    (block.source.path, r.offset, r.original) for r in decode_block(block.payload)
                )
    return directory, by_segment


def grep_json(journal: Path) -> tuple[int, list[Key], str]:
    outcome = run_in_process("grep", "--journal", str(journal), "--json")
    assert_kept_the_contract(outcome)
    found = []
    for line in outcome.stdout.splitlines():
        document = json.loads(line)
        found.append(
            (
                document["log"]["file"]["path"],
                document["log"].get("offset"),
                document["event"]["original"],
            )
        )
    return outcome.code, found, outcome.stderr


@fuzz_settings(60)
@given(what=damages)
@example(what=Damage("flip-header", 0, 17, 255))
@example(what=Damage("zero-page", 1, 1, 0))
@example(what=Damage("fifo", 2, 0, 0))
@example(what=Damage("empty", 1, 0, 0))
def test_grep_shows_every_record_of_the_intact_segments_once(
    what: Damage,
    template: tuple[Path, dict[int, list[Key]]],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    source, by_segment = template
    journal = copy_journal(source, tmp_path_factory.mktemp("damaged") / "journal")
    segments = list_segments(journal)
    sequence, path = segments[what.segment % len(segments)]
    damage(path, what)
    code, found, stderr = grep_json(journal)
    shown = Counter(found)
    intact = [key for segment, keys in by_segment.items() if segment != sequence for key in keys]
    assert {key: shown[key] for key in intact} == dict.fromkeys(intact, 1), stderr
    assert all(count == 1 for count in shown.values()), stderr
    assert code == 0, stderr
