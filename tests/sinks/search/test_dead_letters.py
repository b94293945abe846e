"""The dead-letter file: whole documents (log lines) readable by the agent's user only, whatever
the umask, and a line a full disk cuts short taken back, so the file stays readable and the
document is written whole when there is room (a real 1 MiB tmpfs)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.sinks.search.dead_letters import DeadLetters
from tests.journal.full_disk import fill, small_tmpfs
from tests.journal.modes import modes_under, umask

DOCUMENT = {"@timestamp": "2025-09-14T09:30:00Z", "message": "x", "log": {"offset": "nan"}}


def write(dead: DeadLetters, doc_id: str, document: object = DOCUMENT) -> None:
    dead.write(
        "logs-ascend.plog-default", doc_id, 400, {"type": "mapper_parsing_exception"}, document
    )


def test_under_umask_000_the_folder_is_0700_and_the_file_0600(tmp_path: Path) -> None:
    with umask(0o000):
        dead = DeadLetters(tmp_path / "state" / "dead-letter" / "opensearch.jsonl")
        write(dead, "a")
        write(dead, "b")
    assert modes_under(tmp_path / "state") == {
        ".": 0o700,
        "dead-letter": 0o700,
        "dead-letter/opensearch.jsonl": 0o600,
    }
    assert [letter["id"] for letter in dead.lines()] == ["a", "b"]


def test_a_file_an_older_version_wrote_is_made_0600_at_the_next_letter(tmp_path: Path) -> None:
    path = tmp_path / "elasticsearch.jsonl"
    dead = DeadLetters(path)
    with umask(0o000):
        path.write_text("")
    write(dead, "a")
    assert modes_under(tmp_path)["elasticsearch.jsonl"] == 0o600


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


def test_a_letter_the_full_disk_cuts_short_is_taken_back_and_written_whole_later(
    disk: Path,
) -> None:
    dead = DeadLetters(disk / "dead-letter" / "opensearch.jsonl")
    write(dead, "first")
    filler = fill(disk)
    os.truncate(filler, filler.stat().st_size - 8192)  # room for part of the next letter only
    big = {**DOCUMENT, "message": "m" * 65536}
    with pytest.raises(OSError, match="No space left"):
        write(dead, "second", big)
    assert [letter["id"] for letter in dead.lines()] == ["first"]  # readable, nothing cut
    filler.unlink()
    write(dead, "second", big)
    assert [(letter["id"], letter["document"]) for letter in dead.lines()] == [
        ("first", DOCUMENT),
        ("second", big),
    ]
