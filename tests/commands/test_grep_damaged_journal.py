"""`npuwatch grep` on a journal whose middle segment is damaged, in each way a segment can be:
every record of the other two is printed, one line on stderr names the damaged segment and what
is done about it, and the exit status still says whether anything matched (0) or not (1)."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from npuwatch.cli import main
from npuwatch.journal import layout
from tests.journal.damaged_journal import (
    DAMAGES,
    INDEX_DAMAGES,
    PLOG,
    WHOLE_DAMAGES,
    damage_segment,
    event_lines_of,
    lines_of,
    write_journal,
)
from tests.journal.journal_builder import JournalContents
from tests.npuwatch_command import run_npuwatch

Journal = tuple[Path, JournalContents, Path]
"""A journal folder, what was written to it, and the path of its damaged segment."""


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JournalContents]:
    directory = tmp_path_factory.mktemp("intact") / "journal"
    return directory, write_journal(directory)


def damaged(intact: tuple[Path, JournalContents], tmp_path: Path, damage: str) -> Journal:
    directory = tmp_path / "journal"
    shutil.copytree(intact[0], directory)
    return directory, intact[1], damage_segment(directory, 2, DAMAGES[damage])


@pytest.fixture(params=list(DAMAGES))
def any_damage(
    request: pytest.FixtureRequest, intact: tuple[Path, JournalContents], tmp_path: Path
) -> Journal:
    return damaged(intact, tmp_path, request.param)


@pytest.fixture(params=list(WHOLE_DAMAGES))
def whole_damage(
    request: pytest.FixtureRequest, intact: tuple[Path, JournalContents], tmp_path: Path
) -> Journal:
    return damaged(intact, tmp_path, request.param)


def grep(journal: Journal, *args: str) -> subprocess.CompletedProcess[str]:
    return run_npuwatch("grep", "--journal", str(journal[0]), *args)


def prefixed(lines: list[str], contents: JournalContents) -> list[str]:
    """`lines` as grep prints them: each after its file's path."""
    path_of = {line: log.path for log in contents.files for line in log.lines}
    return [f"{path_of[line]}:{line}" for line in lines]


def assert_one_warning_names(stderr: str, segment: Path) -> None:
    (line,) = stderr.splitlines()
    assert line.startswith(f"npuwatch: journal segment {segment} ")
    assert " is damaged (" in line or " cannot be read (" in line
    assert "the rest of the journal is served" in line
    assert f"the file is left where it is (move it into {segment.parent}/quarantine/" in line


# --- every record of the intact segments, one warning, the exit status of grep ---------------


def test_a_pattern_prints_every_record_of_the_intact_segments_and_exits_0(
    any_damage: Journal,
) -> None:
    done = grep(any_damage, "record")

    assert done.returncode == 0
    assert done.stdout.splitlines() == prefixed(lines_of(any_damage[1], {1, 3}), any_damage[1])
    assert_one_warning_names(done.stderr, any_damage[2])


def test_no_match_in_the_intact_segments_exits_1_with_the_warning(any_damage: Journal) -> None:
    done = grep(any_damage, "no record says this")

    assert (done.returncode, done.stdout) == (1, "")
    assert_one_warning_names(done.stderr, any_damage[2])


def test_a_count_counts_the_records_of_the_intact_segments(any_damage: Journal) -> None:
    done = grep(any_damage, "-c", "record")

    assert (done.returncode, done.stdout) == (0, f"{len(lines_of(any_damage[1], {1, 3}))}\n")
    assert_one_warning_names(done.stderr, any_damage[2])


def test_json_documents_are_those_of_the_intact_segments(any_damage: Journal) -> None:
    done = grep(any_damage, "--json", "record")

    assert done.returncode == 0
    originals = [json.loads(line)["event"]["original"] for line in done.stdout.splitlines()]
    assert originals == lines_of(any_damage[1], {1, 3})
    assert_one_warning_names(done.stderr, any_damage[2])


def test_a_question_for_the_index_prints_the_intact_segments_notable_records(
    whole_damage: Journal,
) -> None:
    done = grep(whole_damage, "--level", "ERROR")

    assert done.returncode == 0
    expected = lines_of(whole_damage[1], {1, 3}, level="ERROR")
    assert done.stdout.splitlines() == prefixed(expected, whole_damage[1])
    assert_one_warning_names(done.stderr, whole_damage[2])


@pytest.mark.parametrize(
    ("damage", "question"),
    [
        ("a page of its notable records", "--level=ERROR"),
        ("a page of its notable records", "--code=E30009"),
        ("a page of its index of levels", "--level=ERROR"),
        ("a page of its codes", "--code=E30009"),
        ("a page of its index of codes", "--code=E30009"),
        ("notable texts that do not decode", "--level=ERROR"),
        ("notable texts that do not decode", "--code=E30009"),
    ],
)
def test_a_segment_whose_index_cannot_be_read_is_answered_from_its_blocks(
    intact: tuple[Path, JournalContents], tmp_path: Path, damage: str, question: str
) -> None:
    directory = tmp_path / "journal"
    shutil.copytree(intact[0], directory)
    journal = (directory, intact[1], damage_segment(directory, 2, INDEX_DAMAGES[damage]))

    done = grep(journal, question)

    assert done.returncode == 0
    expected = lines_of(journal[1], {1, 2, 3}, level="ERROR")
    assert done.stdout.splitlines() == prefixed(expected, journal[1])
    assert_one_warning_names(done.stderr, journal[2])


@pytest.mark.parametrize(
    "damage", ["blocks that decompress to garbage", "blocks that are no zstd frames"]
)
def test_a_question_for_the_index_still_finds_what_a_segment_with_damaged_blocks_indexed(
    intact: tuple[Path, JournalContents], tmp_path: Path, damage: str
) -> None:
    journal = damaged(intact, tmp_path, damage)

    done = grep(journal, "--level", "ERROR")

    assert done.returncode == 0
    expected = lines_of(journal[1], {1, 2, 3}, level="ERROR")
    assert done.stdout.splitlines() == prefixed(expected, journal[1])
    assert done.stderr == ""  # nothing it needed was damaged


def test_events_print_those_of_the_intact_segments(whole_damage: Journal) -> None:
    done = grep(whole_damage, "--events")

    assert done.returncode == 0
    assert done.stdout.splitlines() == event_lines_of(whole_damage[1], {1, 3})
    assert_one_warning_names(done.stderr, whole_damage[2])


def test_context_stops_at_what_cannot_be_read_and_goes_on_in_the_next_segment(
    whole_damage: Journal,
) -> None:
    done = grep(whole_damage, "-C", "1", "record 5 of plog")

    assert done.returncode == 0
    plog = [line for line in lines_of(whole_damage[1], {1, 2, 3}) if " of plog" in line]
    before, hit, after = plog[4], plog[5], plog[12]  # records 6-11 are in the damaged segment
    assert done.stdout.splitlines() == [f"{PLOG}-{before}", f"{PLOG}:{hit}", f"{PLOG}-{after}"]
    assert_one_warning_names(done.stderr, whole_damage[2])


# --- what is no damage ------------------------------------------------------------------------


def test_a_segment_this_user_may_not_read_is_one_line_and_exit_2_not_damage(
    intact: tuple[Path, JournalContents],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Root reads everything: the refusal another user would meet is made here.
    def refused(path: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(layout, "check_segment_file", refused)

    code = main(["grep", "--journal", str(intact[0]), "record"])

    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert captured.err == (
        f"npuwatch: cannot read the journal at {intact[0] / 'segment-00000001.db'}: "
        "Permission denied (run as the agent's user, root by default)\n"
    )
