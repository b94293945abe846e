"""`npuwatch scan` and `parse`, run by root over a tree a real unprivileged user owns and
tampers with: nothing of root's is read, no entry blocks the run, every entry left out is said
in one line, and the files of the user are each read once."""

from __future__ import annotations

import os
from pathlib import Path

from tests.agent.harness import plog_line
from tests.npuwatch_command import run_npuwatch
from tests.unprivileged_user import OtherUser, other_user, root_only_secret

__all__ = ["other_user"]  # the fixture, imported for the tests below

LINES = [plog_line(100, number, "ERROR" if number == 3 else "INFO") for number in range(10)]


def users_tree(tmp_path: Path, user: OtherUser) -> Path:
    tree = user.make_folder(user.home_under(tmp_path) / "collection")
    plog = user.make_folder(tree / "debug" / "plog")
    user.write(plog / "plog-100_1.log", "".join(line + "\n" for line in LINES))
    return tree


def test_roots_scan_of_a_users_tree_reads_no_file_a_planted_link_names_and_never_blocks(
    tmp_path: Path, other_user: OtherUser
) -> None:
    tree = users_tree(tmp_path, other_user)
    plog = tree / "debug" / "plog"
    secret, secret_text = root_only_secret(tmp_path / "root-only", "plog-900_1.log")
    other_user.link(secret, plog / "plog-200_1.log")
    other_user.link(secret.parent, tree / "debug" / "plog-linked")
    other_user.run("mkfifo", str(plog / "plog-300_1.log"))
    other_user.run("mkfifo", str(tree / "mssanitizer_1.log"))  # looked at as a report
    os.link(secret, plog / "plog-400_1.log")  # as where protected_hardlinks is off
    done = run_npuwatch("scan", str(tree), "--json", timeout=60)
    assert secret_text not in done.stdout + done.stderr
    assert done.returncode == 2, done.stderr
    assert sorted(done.stderr.splitlines()) == sorted(
        [
            f"npuwatch: skipping {plog / 'plog-200_1.log'}: a link, not followed (links are "
            "followed only with follow_links)",
            f"npuwatch: skipping {plog / 'plog-300_1.log'}: not a regular file (a FIFO)",
            f"npuwatch: skipping {tree / 'mssanitizer_1.log'}: not a regular file (a FIFO)",
            f"npuwatch: cannot read {plog / 'plog-400_1.log'}: a hard link to a file of another "
            "user",
        ]
    )
    assert '"files": 1' in done.stdout and '"lines": 10' in done.stdout


def test_follow_links_reads_a_users_link_to_their_own_file_once_and_no_link_to_roots(
    tmp_path: Path, other_user: OtherUser
) -> None:
    tree = users_tree(tmp_path, other_user)
    plog = tree / "debug" / "plog"
    secret, secret_text = root_only_secret(tmp_path / "root-only", "plog-900_1.log")
    other_user.link(plog / "plog-100_1.log", plog / "plog-101_1.log")
    other_user.link(secret, plog / "plog-200_1.log")
    done = run_npuwatch("scan", str(tree), "--follow-links", "--json", timeout=60)
    assert secret_text not in done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"npuwatch: skipping {plog / 'plog-200_1.log'}: a link to a file of root (uid 0), not "
        "followed"
    ]
    assert '"files": 1' in done.stdout and '"lines": 10' in done.stdout


def test_a_file_and_a_link_to_it_are_scanned_once(tmp_path: Path) -> None:
    plog = tmp_path / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-100_1.log").write_text("".join(line + "\n" for line in LINES))
    (plog / "plog-101_1.log").symlink_to(plog / "plog-100_1.log")
    done = run_npuwatch("scan", str(tmp_path), "--follow-links", "--json", timeout=60)
    assert '"files": 1' in done.stdout and '"lines": 10' in done.stdout, done.stderr


def test_a_fifo_given_to_scan_or_parse_is_an_input_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "plog-1.log")
    for command in ("scan", "parse"):
        done = run_npuwatch(command, str(tmp_path / "plog-1.log"), timeout=60)
        assert done.returncode == 2
        assert f"{tmp_path / 'plog-1.log'}: not a regular file (a FIFO)" in done.stderr


def test_a_link_loop_is_said_to_be_one(tmp_path: Path) -> None:
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    for command in ("scan", "parse"):
        done = run_npuwatch(command, str(loop), timeout=60)
        assert (done.returncode, done.stderr) == (2, f"npuwatch: cannot read {loop}: a link loop\n")


def test_a_tree_deeper_than_pythons_recursion_limit_is_scanned(tmp_path: Path) -> None:
    folders = [tmp_path / "deep"]
    for _ in range(1500):
        folders.append(folders[-1] / "d")
    for folder in folders:
        folder.mkdir()
    try:
        (folders[-1] / "plog-100_1.log").write_text("".join(line + "\n" for line in LINES))
        done = run_npuwatch("scan", str(tmp_path), "--json", timeout=120)
    finally:  # pytest's own clean-up of tmp_path recurses: it would fail on this tree
        (folders[-1] / "plog-100_1.log").unlink(missing_ok=True)
        for folder in reversed(folders):
            folder.rmdir()
    assert "Traceback" not in done.stderr
    assert '"lines": 10' in done.stdout, done.stderr


def test_an_empty_path_is_a_usage_error_not_the_default_tree(tmp_path: Path) -> None:
    done = run_npuwatch("scan", "", timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        "npuwatch: scan was given an empty path: give a log tree, or no path for the default one\n"
    )
