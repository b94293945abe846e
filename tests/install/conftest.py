"""What users install, built once per test session and run from folders that are not the
checkout: the sdist and the wheel, a wheelhouse of everything they need (by
deploy/offline/build-wheelhouse.sh), and the wheel installed by the README's service steps.

The dependencies come from the package index once, into the wheelhouse; every environment is
then installed from it with no index, so that the session does not fetch 100 MB of wheels per
environment (pip's cache would not help much: most of the time is unpacking, not downloading).
"""

from __future__ import annotations

import platform
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TREES
from tests.install.installing import (
    Artefacts,
    Environment,
    build_wheelhouse,
    checkout_files,
    run,
    succeeded,
)
from tests.install.service_steps import ServiceRoot, run_service_steps


@pytest.fixture(scope="session")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Artefacts:
    """The sdist and the wheel, built by `python -m build` (the wheel from the sdist) from a
    copy of the checkout, so that the build writes nothing into it."""
    source = tmp_path_factory.mktemp("source")
    for name in checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    succeeded(run([sys.executable, "-m", "build", "--outdir", dist, source], source))
    (sdist,) = dist.glob("npuwatch-*.tar.gz")
    (wheel,) = dist.glob("npuwatch-*.whl")
    return Artefacts(dist, sdist, wheel)


@pytest.fixture(scope="session")
def wheelhouse(artefacts: Artefacts, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """npuwatch and its dependencies for this machine's Python, machine and glibc, named
    explicitly as a site names its hosts'."""
    out = tmp_path_factory.mktemp("bundle") / "npuwatch-wheelhouse"
    glibc = platform.libc_ver()[1]
    build_wheelhouse(out, artefacts, "--platform", platform.machine(), "--glibc", glibc)
    return out


@pytest.fixture(scope="session")
def service_root(
    artefacts: Artefacts, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> ServiceRoot:
    """The README's service steps run into a temporary root."""
    return run_service_steps(artefacts, wheelhouse, tmp_path_factory.mktemp("service"))


@pytest.fixture(scope="session")
def installed(service_root: ServiceRoot) -> Environment:
    """The wheel in a fresh virtual environment, installed by the README's own commands."""
    for step in ("python3 -m venv ", "/opt/npuwatch/bin/pip install "):
        succeeded(service_root.result(step))
    return Environment(service_root.environment)


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the checkout holding a copy of the bundled fixture trees as trees/."""
    folder = tmp_path_factory.mktemp("work")
    shutil.copytree(TREES, folder / "trees")
    return folder
