"""A real unprivileged user for the tests of what npuwatch does as root among other users' files.

The user is made with `useradd` for the test and removed after it; what it plants (links,
folders, files) it plants itself, in a process running as it. Without root the tests that need
it are skipped, saying why.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USER_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"}
"""What the user's processes run with: a PATH of the system's folders (the test's own may name
folders only root can enter, as CI's PATH of links does)."""


@dataclass(frozen=True)
class OtherUser:
    name: str
    uid: int
    gid: int

    def run(self, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`command` run as this user (it must succeed)."""
        return subprocess.run(
            command,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=cwd or "/",
            env=USER_ENVIRONMENT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )

    def home_under(self, tmp_path: Path) -> Path:
        """A home folder of this user's under `tmp_path`, as useradd would make it (0755)."""
        home = shared_folder(tmp_path) / self.name
        home.mkdir(0o755)
        os.chown(home, self.uid, self.gid)
        return home

    def make_folder(self, path: Path, mode: int = 0o755) -> Path:
        """A folder of this user's, made by it (its parent must let it)."""
        self.run("mkdir", "-p", "-m", f"{mode:o}", str(path))
        return path

    def link(self, target: str | Path, at: Path) -> Path:
        self.run("ln", "-sfn", str(target), str(at))
        return at

    def write(self, path: Path, text: str) -> Path:
        self.run("sh", "-c", 'printf %s "$1" > "$2"', "write", text, str(path))
        return path


def root_only_secret(folder: Path, name: str = "secret.log") -> tuple[Path, str]:
    """A file only root may read (0600 in a 0700 folder), holding a text no test writes
    anywhere else."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    text = f"root-only-{secrets.token_hex(8)}"
    path = folder / name
    path.write_text(
        f"[ERROR] GE(4242,python3):2025-09-14-09:30:00.000.000 [x.cc:1]1 {text}\n", "utf-8"
    )
    path.chmod(0o600)
    return path, text


def shared_folder(tmp_path: Path) -> Path:
    """A folder under `tmp_path` that any user may enter: pytest's own folders are 0700 and
    root's, so the folders above it get the search bit (only that: nothing is listed or written
    by others) where they lack it."""
    folder = tmp_path / "shared"
    folder.mkdir(exist_ok=True)
    for path in (folder, *folder.parents):
        mode = stat.S_IMODE(path.stat().st_mode)
        if not mode & 0o001:
            path.chmod(mode | 0o011)
    return folder


@pytest.fixture
def other_user() -> Iterator[OtherUser]:
    if os.geteuid() != 0:
        pytest.skip("needs root: the test creates a real unprivileged user and acts as root")
    if shutil.which("useradd") is None:
        pytest.skip("needs useradd to create a real unprivileged user")
    name = f"nwtest{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        import pwd

        entry = pwd.getpwnam(name)
        yield OtherUser(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)
