"""npuwatch on aarch64, as a Kunpeng host gets it: the manylinux2014 wheels that
scripts/build-wheels makes, the aarch64 one in the offline wheelhouse of
deploy/offline/build-wheelhouse.sh with its dependencies' aarch64 wheels, installed from it by
pip, with no index, into a virtual environment of Debian's arm64 Python 3.11 under qemu-user.

Skipped, saying why, where qemu-aarch64 or Debian's arm64 packages cannot be had.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from npuwatch import __version__
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines
from tests.conftest import GOLDEN, REPO
from tests.install.arm64_python import Arm64Python, Unavailable, arm64_python
from tests.install.installing import BUILD_WHEELHOUSE, clean_environment, run

pytestmark = pytest.mark.integration

MACHINES = ("x86_64", "aarch64")
EMULATED_TIMEOUT_S = 900


@dataclass(frozen=True)
class Built:
    wheels: dict[str, Path]
    sdist: Path
    said: str
    """What scripts/build-wheels printed: each wheel and what `auditwheel show` found."""


@dataclass(frozen=True)
class Emulated:
    """A virtual environment of the arm64 Python, under qemu."""

    arm64: Arm64Python
    environment: Path

    def run(self, *args: str | Path, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
        command = self.arm64.command(self.environment / "bin" / "python", *args)
        return run(command, cwd, clean_environment({"TZ": "UTC", "NO_COLOR": "1", **extra}),
                   timeout=EMULATED_TIMEOUT_S)  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("dist")
    done = run([REPO / "scripts" / "build-wheels", out], REPO, timeout=EMULATED_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = {machine: next(out.glob(f"npuwatch-*_{machine}.whl")) for machine in MACHINES}
    return Built(wheels, next(out.glob("npuwatch-*.tar.gz")), done.stdout)


@pytest.fixture(scope="module")
def emulated(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Emulated:
    try:
        arm64 = arm64_python()
    except Unavailable as reason:
        pytest.skip(f"no arm64 Python under qemu here: {reason}")
    work = tmp_path_factory.mktemp("aarch64")
    wheelhouse = work / "npuwatch-wheelhouse"
    # The offline wheelhouse for Kunpeng hosts on Debian 12, as deploy/offline/README.md has it
    # built, from the wheels scripts/build-wheels made; and pip, to install with.
    bundled = run(
        ["bash", BUILD_WHEELHOUSE, "--python", sys.executable, "--platform", "aarch64",
         "--glibc", "2.36", "--dist", built.wheels["aarch64"].parent, "--out", wheelhouse],
        work,
    )  # fmt: skip
    assert bundled.returncode == 0, bundled.stderr
    assert (wheelhouse / built.wheels["aarch64"].name).is_file()
    fetched = run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", work, "pip"],
        work,
    )
    assert fetched.returncode == 0, fetched.stderr
    made = run(arm64.command(arm64.python, "-m", "venv", "--without-pip", work / "env"), work)
    assert made.returncode == 0, made.stderr
    environment = Emulated(arm64, work / "env")
    (pip,) = work.glob("pip-*.whl")
    # pip itself run from its wheel by the arm64 Python, offline, from the wheelhouse alone
    installed = environment.run(
        f"{pip}/pip", "install", "--quiet", "--no-index", "--find-links", wheelhouse, "npuwatch",
        cwd=work, PIP_NO_COMPILE="1",
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    return environment


def test_both_wheels_are_manylinux2014_abi3_with_the_c_extensions(built: Built) -> None:
    for machine, wheel in built.wheels.items():
        assert wheel.name == (
            f"npuwatch-{__version__}-cp311-abi3-manylinux2014_{machine}.manylinux_2_17_{machine}.whl"
        )
        names = set(zipfile.ZipFile(wheel).namelist())
        assert {"npuwatch/parsers/_speedups.abi3.so", "npuwatch/journal/_columns.abi3.so"} <= names
        # what `auditwheel show` found, as the script printed it
        assert f'consistent with the following platform tag: "manylinux_2_17_{machine}"' in (
            built.said
        )
    assert "requires no external shared libraries" in built.said


def test_the_aarch64_wheel_runs_its_c_extensions_on_aarch64(
    emulated: Emulated, tmp_path: Path
) -> None:
    machine = emulated.run("-c", "import platform; print(platform.machine())", cwd=tmp_path)
    assert machine.stdout == "aarch64\n"
    version = emulated.run("-m", "npuwatch", "--version", cwd=tmp_path)
    assert version.stdout == f"npuwatch {__version__} (C speedups on)\n", version.stderr


def test_scan_of_every_bundled_tree_prints_the_same_json_as_on_x86_64(
    emulated: Emulated, tmp_path: Path
) -> None:
    trees = sorted(path for path in (REPO / "fixtures" / "trees").iterdir() if path.is_dir())
    assert len(trees) >= 5
    for tree in trees:
        here = run([sys.executable, "-m", "npuwatch", "scan", "--json", tree], tmp_path,
                   clean_environment({"TZ": "UTC", "NO_COLOR": "1"}))  # fmt: skip
        there = emulated.run("-m", "npuwatch", "scan", "--json", tree, cwd=tmp_path)
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), tree.name
        assert json.loads(there.stdout)["files"], tree.name


GOLDEN_CHECK = """
import json, sys
from datetime import timezone
from pathlib import Path
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
wrong = []
for case in sorted(Path(sys.argv[1]).glob("*.log")):
    documents = [r.to_document() for r in parse_bytes(case.read_bytes(), LocalClock(timezone.utc), path=case.name)]
    expected = [json.loads(line) for line in case.with_suffix(".expected.jsonl").read_text("utf-8").splitlines()]
    if documents != expected:
        wrong.append(case.name)
print(json.dumps({"cases": len(list(Path(sys.argv[1]).glob("*.log"))), "wrong": wrong}))
"""


def test_the_parser_s_golden_files_hold_on_aarch64(emulated: Emulated, tmp_path: Path) -> None:
    done = emulated.run("-c", GOLDEN_CHECK, GOLDEN, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cases": len(list(GOLDEN.glob("*.log"))), "wrong": []}


@pytest.fixture
def agent(emulated: Emulated, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    (tmp_path / "logs").mkdir()
    config = tmp_path / "npuwatch.toml"
    config.write_text('[sources]\nrescan_interval = "300ms"\nidle_flush = "500ms"\n'
                      '[journal]\ncommit_interval = "100ms"\n[sinks.prometheus]\nenabled = false\n')  # fmt: skip
    command = emulated.arm64.command(
        emulated.environment / "bin" / "python", "-m", "npuwatch", "agent",
        "--root", tmp_path / "logs", "--state-directory", tmp_path / "state",
    )  # fmt: skip
    environment = clean_environment({"NPUWATCH_CONFIG": str(config), "TZ": "UTC"})
    process = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.communicate()


def test_an_agent_on_aarch64_journals_a_written_file_exactly(
    agent: subprocess.Popen[str], tmp_path: Path
) -> None:
    lines = [plog_line(4242, number, level="ERROR" if number % 97 == 0 else "INFO")
             for number in range(3000)]  # fmt: skip
    path = plog_path(tmp_path / "logs", 4242)
    append(path, lines[:1500])
    append(path, lines[1500:])
    journal = tmp_path / "state" / "journal"
    try:
        wait_until(lambda: sum(journal_lines(journal).values()) >= len(lines), timeout=300)
    finally:
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    # every line once, as written, read back by this machine's npuwatch from the aarch64 journal
    assert journal_lines(journal) == Counter(lines)
    assert not [line for line in err.splitlines() if " ERROR " in line or "Traceback" in line]
