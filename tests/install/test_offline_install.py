"""deploy/offline/: a wheelhouse installs with no package index reachable, by the commands of
its README, on the oldest supported Python this machine has; the README's aarch64 wheelhouse
finds a wheel of every dependency."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO
from tests.install.installing import (
    Artefacts,
    Environment,
    build_wheelhouse,
    clean_environment,
    index_environment,
    run,
    succeeded,
    unreachable_index,
)
from tests.install.readme_blocks import commands, fenced_blocks, moved, outside

pytestmark = pytest.mark.integration

README = REPO / "deploy" / "offline" / "README.md"
WHEELHOUSE = "npuwatch-wheelhouse"
OLDEST_PYTHON = "3.10"
OLD_GLIBC = "2.17"
"""Older than this machine's: the wheelhouse ships npuwatch's sdist, built on install."""


def build_commands() -> list[str]:
    return commands(fenced_blocks(README, "## Build the wheelhouse", "sh")[0])


def install_commands() -> list[str]:
    return commands(fenced_blocks(README, "## Install on each host", "sh")[0])


def documented_python() -> str:
    """The Python the README's example makes the environment with (`python3.11`)."""
    (python,) = {command.split()[0] for command in install_commands() if " -m venv " in command}
    return python


def python_of_version(version: str) -> Path | None:
    """A working CPython `version` on this machine (the system's, or one of pyenv's)."""
    candidates = [Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")]
    candidates += sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}*/bin/python3"))
    for candidate in candidates:
        try:
            answer = subprocess.run(
                [candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            continue
        if answer.returncode == 0 and answer.stdout.strip() == version:
            return candidate
    return None


def install_as_documented(host: Path, wheelhouse: Path, python: Path) -> Environment:
    """Run the README's install commands on `host`, a folder standing in for a host's `/`
    (they run in host/root, root's home), with the package index unreachable."""
    home = host / "root"
    (host / "etc" / "systemd" / "system").mkdir(parents=True)
    home.mkdir()
    archive = home / f"{WHEELHOUSE}.tar.gz"
    succeeded(run(["tar", "-czf", archive, "-C", wheelhouse.parent, wheelhouse.name], home))
    places = {"/opt/": f"{host}/opt/", "/etc/": f"{host}/etc/", documented_python(): str(python)}
    environment = clean_environment(unreachable_index())
    for command in install_commands():
        local = moved(command, places)
        assert outside(local, host, (str(python),)) == [], f"{command!r} leaves the host folder"
        result = run(["bash", "-c", local], home, environment)
        assert result.returncode == 0, f"{local}\n{result.stdout}{result.stderr}"
    return Environment(host / "opt" / "npuwatch")


@dataclass(frozen=True)
class OfflineInstall:
    python: Path
    wheelhouse: Path
    built: subprocess.CompletedProcess[str]
    environment: Environment
    host: Path


@pytest.fixture(scope="module")
def offline(artefacts: Artefacts, tmp_path_factory: pytest.TempPathFactory) -> OfflineInstall:
    """A wheelhouse for old hosts, built for the oldest supported Python this machine has (3.10
    where there is one, else the tests' own), installed by the README's commands."""
    python = python_of_version(OLDEST_PYTHON) or Path(sys.executable)
    folder = tmp_path_factory.mktemp("offline")
    wheelhouse = folder / "bundle" / WHEELHOUSE
    wheelhouse.parent.mkdir()
    built = build_wheelhouse(wheelhouse, artefacts, "--glibc", OLD_GLIBC, python=python)
    environment = install_as_documented(folder / "host", wheelhouse, python)
    return OfflineInstall(python, wheelhouse, built, environment, folder / "host")


def test_the_settings_of_these_tests_really_leave_pip_without_an_index(tmp_path: Path) -> None:
    result = run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp_path, "six"],
        tmp_path,
        clean_environment({**unreachable_index(), "PIP_RETRIES": "0"}),
    )
    assert result.returncode != 0
    assert "No matching distribution found for six" in result.stderr
    assert not list(tmp_path.iterdir())


def test_a_wheelhouse_for_older_hosts_ships_the_sdist_and_what_building_it_needs(
    offline: OfflineInstall, artefacts: Artefacts
) -> None:
    assert "no npuwatch wheel" in offline.built.stdout
    names = {path.name for path in offline.wheelhouse.iterdir()}
    assert artefacts.sdist.name in names
    assert not any(name.startswith("npuwatch-") and name.endswith(".whl") for name in names)
    present = {canonicalize_name(name.split("-", 1)[0]) for name in names if name.endswith(".whl")}
    assert {"setuptools", "wheel"} <= present
    assert "npuwatch.service" in names


def test_the_readme_s_commands_install_it_with_no_index_and_the_unit_beside_it(
    offline: OfflineInstall, artefacts: Artefacts, work: Path
) -> None:
    version = succeeded(offline.environment.run("--version", cwd=work))
    assert version.stdout == f"npuwatch {artefacts.version} (C speedups on)\n"
    assert (offline.host / "etc" / "systemd" / "system" / "npuwatch.service").is_file()
    # The sdist was built on install, offline, with this machine's compiler.
    assert offline.environment.native(work)


def test_the_offline_install_scans_and_checks_as_the_wheel_does(
    offline: OfflineInstall, installed: Environment, work: Path
) -> None:
    scan = offline.environment.run("scan", "--json", "trees", cwd=work)
    assert (scan.returncode, scan.stderr) == (1, "")
    assert scan.stdout == installed.run("scan", "--json", "trees", cwd=work).stdout
    check = offline.environment.run(
        "config", "check", "-", cwd=work, stdin='[journal]\nmax_age = "7d"\n'
    )
    assert succeeded(check).stdout.startswith("<stdin>: ok\n")


def test_the_offline_install_is_on_the_oldest_supported_python(offline: OfflineInstall) -> None:
    if offline.python == Path(sys.executable):
        pytest.skip(f"no Python {OLDEST_PYTHON} on this machine (pyenv install {OLDEST_PYTHON})")
    script = "import sys, tomli; print('%d.%d' % sys.version_info[:2])"
    answer = succeeded(run([offline.environment.python, "-c", script], offline.host))
    # tomli: Python 3.10 has no tomllib, and the wheelhouse brought it.
    assert answer.stdout.strip() == OLDEST_PYTHON


def requirement_names(wheel: Path) -> set[str]:
    """The normalised names of what the wheel requires, its markers evaluated here."""
    with zipfile.ZipFile(wheel) as archive:
        metadata_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    requirements = [Requirement(text) for text in metadata.get_all("Requires-Dist") or []]
    return {
        canonicalize_name(requirement.name)
        for requirement in requirements
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""})
    }


def test_the_readme_s_aarch64_wheelhouse_has_a_wheel_of_every_dependency(
    artefacts: Artefacts, tmp_path: Path
) -> None:
    (command,) = [c for c in build_commands() if "build-wheelhouse.sh" in c]
    assert "--platform aarch64" in command
    # The artefacts are built once per session: --dist hands them over.
    local = moved(command, {"deploy/offline/": f"{REPO}/deploy/offline/"})
    local = re.sub(r"--python \S+", f"--python {sys.executable}", local)
    local += f" --dist {artefacts.dist}"
    succeeded(run(["bash", "-c", local], tmp_path, index_environment()))
    wheels = [path.name for path in (tmp_path / WHEELHOUSE).glob("*.whl")]
    assert all(name.endswith(("-none-any.whl", "_aarch64.whl")) for name in wheels), wheels
    assert not any(name.startswith("npuwatch-") for name in wheels)
    assert (tmp_path / WHEELHOUSE / artefacts.sdist.name).is_file()
    present = {canonicalize_name(name.split("-", 1)[0]) for name in wheels}
    assert requirement_names(artefacts.wheel) | {"setuptools", "wheel"} <= present
