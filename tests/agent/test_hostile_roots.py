"""The real agent, as root, following a log folder that a real unprivileged user owns and
tampers with: links to root's files, a folder swapped for a link, a FIFO, a hard link, a state
folder made first, a `./npuwatch/` where the agent starts. Nothing of root's is read, written
or run, and everything of the user's is journaled exactly once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from npuwatch.parsers.debug_entries import DEBUG_KIND
from tests.agent.harness import plog_line, wait_until
from tests.agent.telemetry_agent import entries_by_kind
from tests.agent.test_agent_process import journal_lines, start_agent, stop
from tests.conftest import FIXTURES
from tests.unprivileged_user import OtherUser, other_user, root_only_secret, shared_folder

__all__ = ["other_user"]  # the fixture, imported for the tests below

pytestmark = pytest.mark.integration


def users_log_folder(tmp_path: Path, user: OtherUser) -> Path:
    """tmp_path/logs, the agent's root, owned by `user` as ~user/ascend/log would be."""
    shared_folder(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir(0o755)
    os.chown(logs, user.uid, user.gid)
    return logs


def lines_of(pid: int, count: int) -> list[str]:
    return [plog_line(pid, number) for number in range(count)]


def journaled_by_the_agent(tmp_path: Path, lines: list[str], **settings: str) -> str:
    """Run the agent until it journaled `lines`, then stop it; what it said on stderr. It must
    have journaled those lines and nothing else."""
    process = start_agent(tmp_path, settings=settings)
    try:
        wait_until(lambda: journal_lines(tmp_path) == Counter(lines), timeout=60)
    finally:
        code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(lines)
    return err


def test_links_a_fifo_and_a_hard_link_planted_by_a_user_are_skipped_and_the_rest_is_read(
    tmp_path: Path, other_user: OtherUser
) -> None:
    logs = users_log_folder(tmp_path, other_user)
    secret, secret_text = root_only_secret(tmp_path / "root-only", "plog-900_1.log")
    plog = other_user.make_folder(logs / "debug" / "plog")
    lines = lines_of(100, 50)
    other_user.write(plog / "plog-100_1.log", "".join(line + "\n" for line in lines))
    other_user.link(secret, plog / "plog-200_1.log")  # a link at a log name
    other_user.link(secret.parent, logs / "debug" / "device-0")  # a folder that is a link
    other_user.run("mkfifo", str(plog / "plog-300_1.log"))  # blocks a plain open for ever
    os.link(secret, plog / "plog-400_1.log")  # as where protected_hardlinks is off
    err = journaled_by_the_agent(tmp_path, lines)
    assert secret_text not in err
    assert f"skipping {plog / 'plog-200_1.log'}: a link, not followed" in err
    assert f"skipping {plog / 'plog-300_1.log'}: not a regular file (a FIFO)" in err
    assert f"skipping {plog / 'plog-400_1.log'}: a hard link to a file of another user" in err
    grep = subprocess.run(
        [
            sys.executable,
            "-m",
            "npuwatch",
            "grep",
            "--journal",
            str(tmp_path / "state" / "journal"),
            secret_text,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (grep.returncode, grep.stdout) == (1, "")


def test_with_follow_links_a_users_link_to_their_own_log_is_read_once_and_no_other(
    tmp_path: Path, other_user: OtherUser
) -> None:
    logs = users_log_folder(tmp_path, other_user)
    secret, secret_text = root_only_secret(tmp_path / "root-only", "plog-900_1.log")
    plog = other_user.make_folder(logs / "debug" / "plog")
    lines = lines_of(100, 30)
    other_user.write(plog / "plog-100_1.log", "".join(line + "\n" for line in lines))
    other_user.link(plog / "plog-100_1.log", plog / "plog-101_1.log")  # theirs, inside: once
    other_user.link(secret, plog / "plog-200_1.log")  # root's: never
    elsewhere = other_user.make_folder(other_user.home_under(tmp_path) / "elsewhere")
    outside = lines_of(500, 3)
    other_user.write(elsewhere / "plog-500_1.log", "".join(line + "\n" for line in outside))
    other_user.link(elsewhere / "plog-500_1.log", plog / "plog-501_1.log")  # outside the root
    err = journaled_by_the_agent(tmp_path, lines, NPUWATCH_SOURCES__FOLLOW_LINKS="true")
    assert secret_text not in err
    assert f"{plog / 'plog-200_1.log'}: a link to a file of root (uid 0), not followed" in err
    assert f"{plog / 'plog-501_1.log'}: a link to a file outside the folders walked" in err


def test_a_state_folder_another_user_made_first_with_links_in_it_is_refused_untouched(
    tmp_path: Path, other_user: OtherUser
) -> None:
    """The user makes the folder the agent is told to keep its state in, and links where the
    cursors and their temporary file go, to files of root's: the agent does not start, and
    root's files keep their content and mode."""
    (tmp_path / "logs").mkdir()
    targets = []
    for name in ("passwd-like", "shadow-like"):
        target = tmp_path / "root-only" / name
        target.parent.mkdir(exist_ok=True, mode=0o700)
        target.write_text(f"{name}: root's own\n")
        target.chmod(0o600)
        targets.append(target)
    shared_folder(tmp_path).chmod(0o1777)  # as /tmp: anyone may make a folder in it
    state = other_user.make_folder(tmp_path / "shared" / "state", 0o755)
    other_user.make_folder(state / "journal", 0o755)
    other_user.link(targets[0], state / "cursors.json")
    other_user.link(targets[1], state / ".cursors.json.tmp")
    process = start_agent(tmp_path, extra=("--state-directory", str(state)))
    err = process.communicate(timeout=60)[1].decode()
    assert process.returncode == 2, err
    assert err.strip().splitlines() == [
        f"npuwatch: cannot keep npuwatch's state in {state}: {state} is owned by "
        f"{other_user.name} (uid {other_user.uid}); give a folder that only this user owns and "
        "can write (the default is /var/lib/npuwatch)"
    ]
    for target, name in zip(targets, ("passwd-like", "shadow-like"), strict=True):
        assert target.read_text() == f"{name}: root's own\n"
        assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_state_folder_anyone_may_write_in_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    process = start_agent(tmp_path)
    err = process.communicate(timeout=60)[1].decode()
    assert process.returncode == 2, err
    assert f"{state} is writable by others (mode 777)" in err
    assert not (state / "journal").exists()


def test_the_debugging_tools_child_imports_no_npuwatch_of_the_folder_the_agent_runs_in(
    tmp_path: Path,
) -> None:
    """A `./npuwatch/` in the agent's working folder (and a FIFO named like a report beside the
    real one) change nothing: the child imports the installed npuwatch, the report is read."""
    (tmp_path / "logs").mkdir()
    evil = tmp_path / "cwd"
    marker = tmp_path / "ran-as-root"
    for package in ("npuwatch", "npuwatch/agent"):
        (evil / package).mkdir(parents=True)
        (evil / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'w').write('imported')\n"
        )
    debug = tmp_path / "debug"
    debug.mkdir()
    os.mkfifo(debug / "mssanitizer_20250101.log")
    shutil.copy(FIXTURES / "debug_tools" / "sanitizer" / "memcheck.log", debug / "memcheck.log")
    (tmp_path / "npuwatch.toml").write_text(
        f'[debug_tools]\npaths = ["{debug}"]\nscan_interval = "100ms"\nsettle = "300ms"\n'
    )
    process = start_agent(tmp_path, cwd=evil)
    try:
        wait_until(
            lambda: entries_by_kind(tmp_path / "state" / "journal")[DEBUG_KIND] == 11, timeout=60
        )
    finally:
        code, err = stop(process)
    assert code == 0, err
    assert not marker.exists()
    assert entries_by_kind(tmp_path / "state" / "journal")[DEBUG_KIND] == 11  # memcheck's
