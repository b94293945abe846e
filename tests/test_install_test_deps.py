"""`scripts/install-test-deps`, the first half of the README's second command, on a machine it may not install on: run by a
user who is not root, with Java, Maven and Prometheus missing, it names the one line to run and
exits 2 before it installs or runs anything."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.unprivileged_user import OtherUser, other_user, shared_folder

__all__ = ["other_user"]  # the fixture, imported for the test below

MISSING = ("java", "mvn", "promtool")


def programs_but(folder: Path, missing: tuple[str, ...]) -> Path:
    """A folder of links to the system's programs but `missing` (the PATH of a bare machine)."""
    folder.mkdir()
    for system in map(Path, ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")):
        if not system.is_dir():
            continue
        for target in system.iterdir():
            name = target.name
            if name not in missing and not (folder / name).exists() and target.is_file():
                (folder / name).symlink_to(target)
    return folder


def test_without_root_it_names_the_packages_to_install_and_exits_2(
    other_user: OtherUser, tmp_path: Path
) -> None:
    place = shared_folder(tmp_path)
    checkout = place / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "install-test-deps", checkout / "scripts" / "install-test-deps")
    bare = programs_but(place / "bin", MISSING)
    done = subprocess.run(
        ["bash", str(checkout / "scripts" / "install-test-deps")],
        user=other_user.uid,
        group=other_user.gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": str(bare), "LC_ALL": "C"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "scripts/install-test-deps: missing programs; install them with: sudo apt-get "
    )
    for package in ("openjdk-17-jdk-headless", "maven", "prometheus"):
        assert f" {package}" in line
    assert not (checkout / ".venv").exists()  # nothing installed
