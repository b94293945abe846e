"""The agent's state is readable by its own user only, whatever the umask: folders 0700, files
0600, and those an older version made with the umask's modes are tightened."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.durable_files import write_atomically
from npuwatch.private_files import (
    UnsafeFolder,
    create_private,
    make_private,
    private_directory,
)
from tests.journal.modes import mode_of, umask


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """umask 000, the worst case: every mode below comes from the code, none from the umask."""
    with umask(0o000):
        yield


def test_a_new_folder_and_its_missing_parents_are_0700(tmp_path: Path) -> None:
    private_directory(tmp_path / "a" / "b" / "state")
    assert [mode_of(tmp_path / p) for p in ("a", "a/b", "a/b/state")] == [0o700, 0o700, 0o700]


def test_an_existing_folder_of_an_older_version_is_tightened_to_0700(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(0o755)
    assert mode_of(state) == 0o755
    private_directory(state)
    assert mode_of(state) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o720])
def test_a_folder_others_can_write_in_is_refused_and_left_as_it_is(
    tmp_path: Path, mode: int
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(mode)
    with pytest.raises(UnsafeFolder, match="writable by others"):
        private_directory(state)
    assert mode_of(state) == mode


def test_a_folder_below_one_others_can_write_in_without_the_sticky_bit_is_refused(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeFolder, match="shared is writable by others"):
        private_directory(shared / "state")
    assert not (shared / "state").exists()


def test_a_new_folder_in_a_sticky_folder_such_as_tmp_is_made_and_private(tmp_path: Path) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    private_directory(sticky / "npuwatch")
    assert mode_of(sticky / "npuwatch") == 0o700


def test_a_link_of_this_users_own_to_the_state_folder_is_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(0o755)
    (tmp_path / "state").symlink_to(tmp_path / "elsewhere")
    # A link of this user's own is followed (folder_problem); the folder made private is the
    # one it names, through a descriptor, never the link.
    private_directory(tmp_path / "state")
    assert mode_of(tmp_path / "elsewhere") == 0o700


def test_an_existing_folder_chosen_for_one_file_is_left_as_it_is(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(0o755)
    private_directory(shared, tighten=False)
    private_directory(shared / "dead-letter", tighten=False)
    assert (mode_of(shared), mode_of(shared / "dead-letter")) == (0o755, 0o700)


def test_a_file_where_the_folder_should_be_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("x")
    with pytest.raises(UnsafeFolder, match="is not a folder"):
        private_directory(tmp_path / "state")


def test_a_file_written_atomically_is_0600_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "cursors.json"
    path.write_text("old")
    path.chmod(0o666)
    write_atomically(path, b"new")
    assert (path.read_bytes(), mode_of(path)) == (b"new", 0o600)
    assert [p.name for p in tmp_path.iterdir()] == ["cursors.json"]


def test_a_created_file_is_0600_and_an_existing_one_is_made_0600(tmp_path: Path) -> None:
    created = tmp_path / "new.jsonl"
    os.close(create_private(created))
    old = tmp_path / "old.jsonl"
    old.write_text("x")
    old.chmod(0o644)
    os.close(create_private(old, os.O_WRONLY | os.O_APPEND))
    assert (mode_of(created), mode_of(old), old.read_text()) == (0o600, 0o600, "x")


def test_make_private_tightens_a_file_and_ignores_a_missing_one(tmp_path: Path) -> None:
    path = tmp_path / "profiling-imported.json"
    path.write_text("{}")
    path.chmod(0o666)
    make_private(path)
    make_private(tmp_path / "missing.json")
    assert mode_of(path) == 0o600
