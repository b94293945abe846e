"""Cursors: saved atomically, loaded back exactly, and a file damaged by a crash is recovered
from with one warning (every sink starts again at the beginning: repeats, no loss)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from npuwatch.journal.cursors import Cursor, CursorStore
from npuwatch.journal.reader import Position
from tests.journal.modes import mode_of, umask

CONSOLE = Cursor(Position(3, 17), Position(2, 5))
SEARCH = Cursor(Position(1, 0), Position(4, 250))


def saved(path: Path) -> Path:
    store = CursorStore(path)
    store.set("console", CONSOLE)
    store.set("search", SEARCH)
    store.save()
    return path


def test_saved_cursors_load_back_exactly(tmp_path: Path) -> None:
    store = CursorStore(saved(tmp_path / "cursors.json"))
    assert (store.get("console"), store.get("search"), store.get("other")) == (
        CONSOLE,
        SEARCH,
        None,
    )
    assert not store.recovered


def test_the_cursor_file_is_plain_json_with_a_version(tmp_path: Path) -> None:
    data = json.loads(saved(tmp_path / "cursors.json").read_text())
    assert data == {
        "version": 1,
        "cursors": {
            "console": {"blocks": [3, 17], "events": [2, 5], "states": [0, 0]},
            "search": {"blocks": [1, 0], "events": [4, 250], "states": [0, 0]},
        },
    }


def test_a_file_written_before_states_reads_as_no_state_read_yet(tmp_path: Path) -> None:
    path = tmp_path / "cursors.json"
    path.write_text(
        '{"version": 1, "cursors": {"search": {"blocks": [1, 7], "events": [4, 250]}}}',
        encoding="utf-8",
    )
    store = CursorStore(path)
    assert store.get("search") == Cursor(Position(1, 7), Position(4, 250), Position(0, 0))
    assert not store.recovered


def test_no_file_means_no_cursors_and_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        store = CursorStore(tmp_path / "cursors.json")
    assert (store.get("console"), store.recovered, caplog.records) == (None, False, [])


def _truncated(path: Path) -> bytes:
    text = saved(path).read_bytes()
    return text[: len(text) // 2]


DAMAGE = {
    "empty": lambda path: b"",
    "truncated": _truncated,
    "NUL-filled": lambda path: b"\x00" * 4096,
    "not JSON": lambda path: b"console 3 17 2 5\n",
    "not UTF-8": lambda path: b'{"version": 1, "cursors": {"\xff": 1}}',
    "JSON of another shape": lambda path: (
        b'{"version": 1, "cursors": {"console": {"blocks": [3]}}}'
    ),
    "a JSON list": lambda path: b"[1, 2]",
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_cursor_file_recovers_to_no_cursors_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    path = tmp_path / "cursors.json"
    content = DAMAGE[damage](path)
    path.write_bytes(content)
    with caplog.at_level(logging.DEBUG):
        store = CursorStore(path)
    assert (store.get("console"), store.get("search"), store.recovered) == (None, None, True)
    assert [(r.name, r.levelname) for r in caplog.records] == [
        ("npuwatch.journal.cursors", "WARNING")
    ]
    message = caplog.records[0].getMessage()
    assert str(path) in message
    assert f"{len(content)} bytes" in message


def test_after_a_recovery_the_next_save_writes_a_sound_file(tmp_path: Path) -> None:
    path = tmp_path / "cursors.json"
    path.write_bytes(b"\x00" * 512)
    store = CursorStore(path)
    store.set("console", CONSOLE)
    store.save()
    again = CursorStore(path)
    assert (again.get("console"), again.recovered) == (CONSOLE, False)


def test_a_save_leaves_no_temporary_file_and_replaces_the_content_whole(tmp_path: Path) -> None:
    path = saved(tmp_path / "cursors.json")
    store = CursorStore(path)
    store.set("console", Cursor(Position(9, 1), Position(9, 2)))
    store.save()
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["cursors.json"]
    assert CursorStore(path).get("console") == Cursor(Position(9, 1), Position(9, 2))
    assert CursorStore(path).get("search") == SEARCH


def test_a_save_that_fails_before_the_rename_leaves_the_old_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved(tmp_path / "cursors.json")
    before = path.read_bytes()
    store = CursorStore(path)
    store.set("console", Cursor(Position(50, 1), Position(50, 1)))

    def disk_error(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", disk_error)
    assert not store.save()  # refused: the cursors wait in memory, no exception
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["cursors.json"]
    assert CursorStore(path).get("console") == CONSOLE
    assert store.save(at_once=True)
    assert CursorStore(path).get("console") == Cursor(Position(50, 1), Position(50, 1))


def test_the_cursor_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    with umask(0o000):
        path = saved(tmp_path / "cursors.json")
    assert mode_of(path) == 0o600
