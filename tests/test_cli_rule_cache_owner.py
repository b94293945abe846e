"""Root running `scan` with a rule cache folder another user controls (`sudo -E`, a sudo that
keeps HOME, a shared NPUWATCH_CACHE): the user plants a pickle that runs code and a cache file
that hides every finding; neither is used, one warning says why, and the report is right.

Before, the cache was a pickle loaded before its stamp was checked: the user's code ran as root.
"""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.rules import rule_cache_format
from npuwatch.rules.condition import Comparison
from npuwatch.rules.loader import default_locations, load_rules, rule_files
from npuwatch.rules.rule_cache import RuleCache
from tests.conftest import TREES
from tests.npuwatch_command import clean_environment, run_npuwatch
from tests.unprivileged_user import USER_ENVIRONMENT

TREE = TREES / "out-of-memory"


class RunsCode:
    """Unpickled, it creates the file `marker`: what an attacker's pickle would do as root."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def someone() -> Iterator[pwd.struct_passwd]:
    """A real unprivileged user, created for the test and removed after it."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates a user, and is about what root's `scan` reads")
    if shutil.which("useradd") is None:
        pytest.fail("no useradd: CI installs passwd (the test needs a real second user)")
    name = f"npw{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=True, capture_output=True)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder under /tmp that any user can enter (pytest's own is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="npuwatch-cache-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def plant(user: pwd.struct_passwd, files: dict[Path, bytes]) -> None:
    """Write `files` as `user`, in a process of theirs (a shell: root's Python is root's)."""
    for path, data in files.items():
        subprocess.run(
            ["/bin/sh", "-c", 'cat > "$1"', "sh", str(path)],
            input=data,
            user=user.pw_uid,
            group=user.pw_gid,
            env=USER_ENVIRONMENT,
            check=True,
            capture_output=True,
        )


def hiding_every_finding(scratch: Path) -> tuple[str, bytes]:
    """The name and bytes of a well-formed cache file of the default packs, with the right
    stamp, in which no rule can match (what the user could compute: the stamp is of files
    anyone reads)."""
    files = rule_files(default_locations())
    entry = RuleCache(scratch).entry(files)
    assert entry is not None
    never = Comparison("log.level", "==", ("NEVER",), "", 0)
    packs = []
    for path in files:
        rules = load_rules([path]).rules
        name = rules[0].pack if rules else path.stem
        packs.append((name, (), tuple((rule.spec, rule.origin, never) for rule in rules)))
    return entry.path.name, rule_cache_format.encode(entry.stamp, packs)


@pytest.mark.parametrize("how", ["owned by the user", "writable by everyone"])
def test_root_scans_with_a_cache_folder_another_user_controls_and_runs_none_of_it(
    how: str, someone: pwd.struct_passwd, shared: Path, tmp_path: Path
) -> None:
    cache = shared / "cache"
    cache.mkdir()
    if how == "owned by the user":
        os.chown(cache, someone.pw_uid, someone.pw_gid)
    else:
        cache.chmod(0o777)
    marker = shared / "code-ran-as-root"
    json_name, json_bytes = hiding_every_finding(tmp_path / "scratch")
    pickle_name = json_name.removesuffix(".json") + ".pickle"
    plant(
        someone,
        {cache / pickle_name: pickle.dumps(RunsCode(marker)), cache / json_name: json_bytes},
    )
    planted = sorted(path.name for path in cache.iterdir())

    expected = run_npuwatch("scan", str(TREE), "--json", env=clean_environment(NPUWATCH_CACHE=""))
    done = run_npuwatch(
        "scan", str(TREE), "--json", env=clean_environment(NPUWATCH_CACHE=str(cache))
    )

    assert not marker.exists()
    assert expected.returncode == done.returncode == 1  # findings
    assert done.stdout == expected.stdout
    problem = (
        f"is owned by {someone.pw_name} (uid {someone.pw_uid})"
        if how == "owned by the user"
        else "is writable by others (mode 777)"
    )
    assert done.stderr == (
        f"npuwatch: warning: the rule cache in {cache} is not used: {cache} {problem} (set "
        "NPUWATCH_CACHE to a folder of your own, or to nothing)\n"
    )
    assert sorted(path.name for path in cache.iterdir()) == planted  # nothing written there
