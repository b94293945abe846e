"""An npuwatch without its C speedups says so: `--version`, `doctor`, one WARNING at the agent's
start, and the `speedups` label of npuwatch_build_info. The installation without them is real:
the package's own files without its compiled modules, what a host gets from the source
distribution where no compiler or Python headers are installed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import npuwatch
from npuwatch import __version__
from npuwatch.speedups import speedups
from tests.conftest import REAL_LOGS, REPO

OFF = (
    "C speedups off: first pass, block columns and trigram filters in pure Python, the same "
    "records at about 2.4x the CPU a line"
)


@pytest.fixture(scope="module")
def pure(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a run of npuwatch installed without its compiled modules."""
    site = tmp_path_factory.mktemp("pure-site")
    shutil.copytree(
        Path(npuwatch.__file__).parent,
        site / "npuwatch",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"),
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NPUWATCH_")}
    return {**environment, "PYTHONPATH": str(site), "NO_COLOR": "1", "TZ": "UTC"}


def npuwatch_of(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npuwatch", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_copy_runs_the_pure_python_first_pass(pure: dict[str, str]) -> None:
    code = "import npuwatch.parsers.first_pass as f; print(f.__file__, f.NATIVE)"
    where, native = subprocess.run(
        [sys.executable, "-c", code], env=pure, capture_output=True, text=True, check=True
    ).stdout.split()
    assert where.startswith(pure["PYTHONPATH"]) and native == "False"


def test_version_says_whether_the_speedups_are_on(pure: dict[str, str]) -> None:
    assert npuwatch_of(pure, "--version").stdout == f"npuwatch {__version__} ({OFF})\n"
    here = "C speedups on" if speedups().on else OFF
    assert npuwatch_of(dict(os.environ), "--version").stdout == f"npuwatch {__version__} ({here})\n"


def test_doctor_warns_with_what_it_costs_and_how_to_get_them(pure: dict[str, str]) -> None:
    done = npuwatch_of(
        pure, "doctor", "--json", "--sample-seconds", "0", "--npu-smi", "absent-npu-smi"
    )
    assert done.returncode == 1  # a warning is a finding
    checks = {check["key"]: check for check in json.loads(done.stdout)["checks"]}
    check = checks["npuwatch.speedups"]
    assert (check["status"], check["detail"]) == ("warn", f"{__version__}, {OFF}")
    assert "python3-dev" in check["action"]
    assert check["facts"]["speedups"] == "python"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_agent_warns_once_at_start_and_its_build_info_says_python(
    pure: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    (tmp_path / "logs").mkdir()
    config = tmp_path / "npuwatch.toml"
    config.write_text(f'[sinks.prometheus]\nlisten = "127.0.0.1:{port}"\n')
    env = {**pure, "NPUWATCH_CONFIG": str(config)}
    command = [
        "agent",
        "--root",
        str(tmp_path / "logs"),
        "--state-directory",
        str(tmp_path / "state"),
    ]
    agent = subprocess.Popen(
        [sys.executable, "-m", "npuwatch", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline, page = time.monotonic() + 60, ""
        while time.monotonic() < deadline and agent.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as got:
                    page = got.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        time.sleep(1.0)  # (the start's lines are said by then)
    finally:
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
    said = err.decode().splitlines()
    assert agent.returncode == 0, said
    info = [line for line in page.splitlines() if line.startswith("npuwatch_build_info{")]
    assert info == [f'npuwatch_build_info{{speedups="python",version="{__version__}"}} 1.0']
    (warning,) = [line for line in said if "C speedups" in line]
    assert warning.startswith(f"npuwatch: WARNING {OFF}; install npuwatch from a wheel built")


def log_files() -> list[Path]:
    """The bundled fixtures' logs, and the real excerpts where ../shared is beside the checkout."""
    files = sorted((REPO / "fixtures").rglob("*.log"))
    if REAL_LOGS.is_dir():
        files += sorted(REAL_LOGS.rglob("*.log"))
    return files


def test_both_paths_give_the_same_documents_byte_for_byte(pure: dict[str, str]) -> None:
    """What a host on either path ships: every record of every log, as JSON."""
    if not speedups().on:
        pytest.skip("this installation has no C speedups to compare with")
    files = [str(path) for path in log_files()]
    assert len(files) > 100
    arguments = ("parse", "--timezone", "Asia/Shanghai", "--host", "node-1", *files)
    with_c = npuwatch_of(dict(os.environ, TZ="UTC"), *arguments)
    without = npuwatch_of(pure, *arguments)
    assert (with_c.returncode, without.returncode) == (0, 0), without.stderr
    assert with_c.stdout.count("\n") > 10_000
    assert without.stdout == with_c.stdout


def test_both_paths_scan_the_bundled_trees_alike(pure: dict[str, str]) -> None:
    if not speedups().on:
        pytest.skip("this installation has no C speedups to compare with")
    trees = REPO / "fixtures" / "trees"
    for tree in sorted(path for path in trees.iterdir() if path.is_dir()):
        with_c = npuwatch_of(dict(os.environ, TZ="UTC"), "scan", "--json", str(tree))
        without = npuwatch_of(pure, "scan", "--json", str(tree))
        assert without.stdout == with_c.stdout, tree.name
