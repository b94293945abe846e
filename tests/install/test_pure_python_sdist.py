"""The sdist on a host without a C compiler: pip builds it anyway, npuwatch runs its pure-Python
first pass and block columns, and `scan` says exactly what the compiled one says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.install.installing import Environment, clean_environment, new_environment

pytestmark = pytest.mark.integration

COMPILERS = ("cc", "gcc", "clang", "c99", "x86_64-linux-gnu-gcc", "aarch64-linux-gnu-gcc")


@pytest.fixture(scope="module")
def without_compiler(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Environment:
    root = tmp_path_factory.mktemp("sdist-install") / "venv"
    # Only the environment's own bin/ on PATH: no compiler can be found, whatever the machine
    # has in /usr/bin. --no-binary makes pip build npuwatch from the sdist beside the wheel, and
    # without the cache it cannot reuse a wheel built (with the extension) earlier.
    environment = clean_environment({"PATH": str(root / "bin"), "PIP_NO_CACHE_DIR": "1"})
    for variable in ("CC", "CXX", "LDSHARED", "CFLAGS", "LDFLAGS"):
        environment.pop(variable, None)
    assert not any(shutil.which(name, path=environment["PATH"]) for name in COMPILERS)
    return new_environment(root, wheelhouse, "npuwatch", "--no-binary", "npuwatch", env=environment)


def test_without_a_compiler_the_sdist_installs_the_pure_python_first_pass(
    without_compiler: Environment, work: Path
) -> None:
    assert not without_compiler.native(work)
    package = next(without_compiler.root.glob("lib/python*/site-packages/npuwatch"))
    assert not list(package.glob("parsers/_speedups*"))
    assert not list(package.glob("journal/_columns*"))


def test_the_pure_python_scan_of_every_tree_is_byte_for_byte_the_compiled_one(
    without_compiler: Environment, installed: Environment, work: Path
) -> None:
    assert installed.native(work)
    compiled = installed.run("scan", "--json", "trees", cwd=work)
    pure = without_compiler.run("scan", "--json", "trees", cwd=work)
    assert compiled.returncode == 1, compiled.stderr
    assert (pure.returncode, pure.stdout, pure.stderr) == (
        compiled.returncode,
        compiled.stdout,
        compiled.stderr,
    )
