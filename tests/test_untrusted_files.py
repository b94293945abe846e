"""Opening what npuwatch reads among other users' files: no link they planted, no FIFO, no
device, no hard link to root's files, whichever way the path was made to lead there."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from npuwatch.untrusted_files import UnsafeFile, open_file, read_file
from tests.unprivileged_user import USER_ENVIRONMENT, OtherUser, other_user, root_only_secret

__all__ = ["other_user"]  # the fixture, imported for the tests below


@pytest.fixture
def area(tmp_path: Path, other_user: OtherUser) -> Path:
    """A log folder the other user owns (as ~user/ascend/log would be), made by it."""
    return other_user.make_folder(other_user.home_under(tmp_path) / "log")


def test_a_regular_file_of_another_user_is_read(area: Path, other_user: OtherUser) -> None:
    other_user.write(area / "plog-1.log", "a line\n")
    assert read_file(area / "plog-1.log") == b"a line\n"


def test_a_link_another_user_planted_at_a_log_name_is_refused(
    tmp_path: Path, area: Path, other_user: OtherUser
) -> None:
    secret, _ = root_only_secret(tmp_path / "root-only")
    link = other_user.link(secret, area / "plog-1.log")
    with pytest.raises(UnsafeFile, match=f"a link owned by {other_user.name}"):
        open_file(link)


def test_a_folder_another_user_swapped_for_a_link_is_refused_at_the_open(
    tmp_path: Path, area: Path, other_user: OtherUser
) -> None:
    """The path names a folder of theirs that is a link to root's folder: the file the kernel
    opened is not where the path says, whatever was checked before."""
    secret, _ = root_only_secret(tmp_path / "root-only", "plog-1.log")
    other_user.link(secret.parent, area / "plog")
    with pytest.raises(UnsafeFile, match="reached through a link"):
        open_file(area / "plog" / "plog-1.log")


def test_a_swap_while_opening_never_yields_the_file_the_link_names(
    tmp_path: Path, area: Path, other_user: OtherUser
) -> None:
    """A user swaps their folder and a link to root's folder back and forth as fast as it can
    while root opens the same path: every open gives their file or is refused, never root's."""
    secret, text = root_only_secret(tmp_path / "root-only", "plog-1.log")
    other_user.make_folder(area / "real")
    other_user.write(area / "real" / "plog-1.log", "theirs\n")
    swapper = (
        'while :; do ln -sfn "$1" "$3.new" && mv -T "$3.new" "$3"; '
        'ln -sfn "$2" "$3.new" && mv -T "$3.new" "$3"; done'
    )
    args = [str(area / "real"), str(secret.parent), str(area / "plog")]
    import subprocess

    process = subprocess.Popen(
        ["sh", "-c", swapper, "swap", *args],
        user=other_user.uid,
        group=other_user.gid,
        env=USER_ENVIRONMENT,
    )
    got: list[bytes] = []
    try:
        for _ in range(3000):
            try:
                got.append(read_file(area / "plog" / "plog-1.log"))
            except OSError:
                continue
    finally:
        process.kill()
        process.wait()
    assert text.encode() not in b"".join(got)


def test_a_fifo_named_like_a_log_is_refused_without_blocking(
    area: Path, other_user: OtherUser
) -> None:
    other_user.run("mkfifo", str(area / "plog-1.log"))
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: _try(outcome, area / "plog-1.log"), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the open blocked on a FIFO"
    assert isinstance(outcome[0], UnsafeFile) and "a FIFO" in str(outcome[0])


def _try(outcome: list[BaseException | bytes], path: Path) -> None:
    try:
        outcome.append(read_file(path))
    except OSError as error:
        outcome.append(error)


def test_a_device_named_like_a_log_is_refused(tmp_path: Path) -> None:
    (tmp_path / "named.log").symlink_to("/dev/zero")  # root's own link: followed, then refused
    with pytest.raises(UnsafeFile, match="a device"):
        open_file(tmp_path / "named.log")


def test_a_hard_link_to_a_file_of_root_in_another_users_folder_is_refused(
    tmp_path: Path, area: Path
) -> None:
    """Where protected_hardlinks is off a user can make one; root makes it here to stand for it."""
    secret, _ = root_only_secret(tmp_path / "root-only")
    os.link(secret, area / "plog-1.log")
    with pytest.raises(UnsafeFile, match="a hard link to a file of another user"):
        open_file(area / "plog-1.log")


def test_roots_own_link_in_roots_own_folder_is_followed(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "latest.log").symlink_to(tmp_path / "a.log")
    assert read_file(tmp_path / "latest.log") == b"x\n"


def test_roots_own_link_in_another_users_folder_is_refused(
    tmp_path: Path, area: Path, other_user: OtherUser
) -> None:
    """The user could swap it for a link of theirs between a look at its owner and the open."""
    other_user.write(area / "a.log", "x\n")
    (area / "latest.log").symlink_to(area / "a.log")
    with pytest.raises(UnsafeFile, match="a link in a folder another user controls"):
        open_file(area / "latest.log")


def test_a_path_the_operator_names_may_be_a_link_but_not_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    os.mkfifo(tmp_path / "pipe.log")
    assert read_file(tmp_path / "b.log", named=True) == b"x\n"
    with pytest.raises(UnsafeFile, match="a FIFO"):
        read_file(tmp_path / "pipe.log", named=True)


def test_a_link_loop_says_so(tmp_path: Path) -> None:
    (tmp_path / "loop.log").symlink_to(tmp_path / "loop.log")
    with pytest.raises(UnsafeFile, match="a link loop"):
        open_file(tmp_path / "loop.log")
