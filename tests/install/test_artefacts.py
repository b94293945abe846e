"""The sdist and the wheel hold every file the package needs at run time.

The checkout's editable install reads the rule packs from the source tree, so a file missing
from the artefacts shows only here: the wheel once shipped without the packs, and every command
that loads rules failed.
"""

from __future__ import annotations

import sys
import sysconfig
import tarfile
import zipfile

import pytest

from tests.install.installing import Artefacts, checkout_files

pytestmark = pytest.mark.integration

PACKAGE = "src/npuwatch/"


def package_files() -> set[str]:
    """The package's files in the checkout, as `npuwatch/...`."""
    names = (name.as_posix() for name in checkout_files())
    return {name.removeprefix("src/") for name in names if name.startswith(PACKAGE)}


EXTENSION_SOURCES = {
    "npuwatch/parsers/_speedups.c",
    "npuwatch/journal/_columns.c",
    "npuwatch/journal/_trigrams.c",
}
C_SOURCES = {*EXTENSION_SOURCES, "npuwatch/limited_api.h"}
STABLE_ABI = sys.version_info >= (3, 11)
"""From 3.11 on the extensions are built for the stable ABI (setup.py)."""


def extension_names() -> set[str]:
    suffix = ".abi3.so" if STABLE_ABI else sysconfig.get_config_var("EXT_SUFFIX")
    return {name.removesuffix(".c") + suffix for name in EXTENSION_SOURCES}


def test_the_package_has_data_files_that_are_not_python() -> None:
    data = {name for name in package_files() if not name.endswith(".py")}
    assert "npuwatch/py.typed" in data
    assert data >= C_SOURCES
    assert sum(name.startswith("npuwatch/rules/packs/") for name in data) >= 6


def test_the_wheel_holds_every_file_of_the_package_but_the_c_sources(artefacts: Artefacts) -> None:
    with zipfile.ZipFile(artefacts.wheel) as wheel:
        names = {name for name in wheel.namelist() if not name.startswith("npuwatch-")}
    assert names == (package_files() - C_SOURCES) | extension_names()


def test_the_wheel_is_for_this_machine_and_python_3_11_on(artefacts: Artefacts) -> None:
    python = "cp311" if STABLE_ABI else f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = "abi3" if STABLE_ABI else python
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert artefacts.wheel.name == f"npuwatch-{artefacts.version}-{python}-{abi}-{platform}.whl"


def test_the_sdist_holds_the_package_the_c_source_and_the_deployment_files(
    artefacts: Artefacts,
) -> None:
    top = f"npuwatch-{artefacts.version}/"
    with tarfile.open(artefacts.sdist) as sdist:
        names = {m.name.removeprefix(top) for m in sdist.getmembers() if m.isfile()}
    assert {name.removeprefix("src/") for name in names if name.startswith(PACKAGE)} == (
        package_files()
    )
    deployment = {name.as_posix() for name in checkout_files() if name.parts[0] == "deploy"}
    assert deployment <= names
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md"} <= names
    # The few test files setuptools would add by default cannot run without the rest.
    assert not any(name.startswith("tests/") for name in names)
