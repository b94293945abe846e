"""Running what users install: commands in a clean environment, virtual environments, the
build of the artefacts and of a wheelhouse."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO, TREES

BUILD_WHEELHOUSE = REPO / "deploy" / "offline" / "build-wheelhouse.sh"
STEP_TIMEOUT_S = 300


_NOT_HANDED_ON = frozenset(
    ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP", "VIRTUAL_ENV", "CONDA_PREFIX")
)
"""What would make an environment's Python import something other than what it installed."""


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without NPUWATCH_* settings, without pip settings (a
    machine's find-links or index must not decide what these tests install) and without what
    points Python at other packages, plus `extra`."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith(("NPUWATCH_", "PIP_")) and name not in _NOT_HANDED_ON
    }
    # Bytecode is compiled when a module is first imported instead: what is installed is the
    # same, and the environments install in a third of the time.
    environment["PIP_NO_COMPILE"] = "1"
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    environment.update(extra or {})
    return environment


def run(
    command: Sequence[str | Path],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = STEP_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=dict(env) if env is not None else clean_environment(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def succeeded(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    command = " ".join(map(str, result.args))
    assert result.returncode == 0, (
        f"{command} → {result.returncode}\n{result.stdout}{result.stderr}"
    )
    return result


def closed_port() -> int:
    """A local TCP port that nothing listens on: connections to it are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def unreachable_index() -> dict[str, str]:
    """Environment that points pip at an index that refuses connections, and at no proxy."""
    return {
        "PIP_INDEX_URL": f"http://127.0.0.1:{closed_port()}/simple",
        "http_proxy": "",
        "https_proxy": "",
        "HTTP_PROXY": "",
        "HTTPS_PROXY": "",
    }


@dataclass(frozen=True)
class Artefacts:
    dist: Path
    sdist: Path
    wheel: Path

    @property
    def version(self) -> str:
        return self.sdist.name.removeprefix("npuwatch-").removesuffix(".tar.gz")


@dataclass(frozen=True)
class Environment:
    """A virtual environment with npuwatch installed."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def npuwatch(self) -> Path:
        return self.root / "bin" / "npuwatch"

    def run(
        self,
        *args: str | Path,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return run([self.npuwatch, *args], cwd, env, stdin)

    def native(self, cwd: Path) -> bool:
        """Whether the installed first pass and block columns are the C extensions (both or
        neither: they are built together)."""
        script = (
            "import npuwatch.parsers.first_pass as f, npuwatch.journal.block_columns as b; "
            "print(f.NATIVE, b.NATIVE)"
        )
        answer = succeeded(run([self.python, "-c", script], cwd)).stdout.strip()
        assert answer in ("True True", "False False"), answer
        return answer == "True True"


def checkout_files() -> list[Path]:
    """The checkout's files as git sees them: tracked and new, without what .gitignore names
    (build output, the in-place extension, caches)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    return [Path(name) for name in listing.split("\0") if name and (REPO / name).is_file()]


def new_environment(
    root: Path,
    wheelhouse: Path,
    requirement: str | Path,
    *pip_options: str,
    env: Mapping[str, str] | None = None,
) -> Environment:
    """A fresh virtual environment with `requirement` installed from `wheelhouse` alone."""
    # Without its own pip (ensurepip takes longer than the install); this process's pip
    # installs into it with --python.
    succeeded(run([sys.executable, "-m", "venv", "--without-pip", root], root.parent, env))
    pip = [sys.executable, "-m", "pip", "--python", root / "bin" / "python", "install"]
    options = ["--no-index", "--find-links", str(wheelhouse), *pip_options]
    succeeded(run([*pip, *options, str(requirement)], root.parent, env))
    return Environment(root)


def build_wheelhouse(
    out: Path, artefacts: Artefacts, *options: str, python: str | Path = sys.executable
) -> subprocess.CompletedProcess[str]:
    """Run deploy/offline/build-wheelhouse.sh with the package index, as a site would."""
    command = ["bash", BUILD_WHEELHOUSE, "--python", python, "--dist", artefacts.dist]
    return succeeded(run([*command, "--out", out, *options], out.parent, index_environment()))


def index_environment() -> dict[str, str]:
    """This process's environment without NPUWATCH_* settings: pip as this machine has it set
    up, with the package index."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("NPUWATCH_")}


def tree_names() -> list[str]:
    return sorted(path.name for path in TREES.iterdir() if path.is_dir())
