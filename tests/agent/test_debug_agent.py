"""The debugging tools' outputs through the real agent: entries in the journal that `grep
--module` finds, rule events beside them, and each output imported exactly once across a
restart."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import Config
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.parsers.debug_entries import DEBUG_KIND
from tests.agent.telemetry_agent import entries_by_kind
from tests.conftest import FIXTURES, REPO

DEBUG = FIXTURES / "debug_tools"
ENTRIES = 12 + 7 + 1
"""The fixture outputs' findings: memcheck's 11 and msaicerr's 1, the monitor's 7, the overflow
node."""


def run_agent(work: Path, until_entries: int) -> Counter[str]:
    """The agent over `work/debug` until the journal holds `until_entries` debug entries (or 2 s
    more when none are expected); the journal's entries by kind after the drain."""
    config = Config.model_validate(
        {
            "agent": {"state_directory": str(work / "state"), "host_name": "node-1"},
            "sources": {"roots": [str(work / "logs")], "rescan_interval": 0.3},
            "journal": {"commit_interval": 0.05, "sync": "normal"},
            "devices": {"enabled": False},
            "debug_tools": {"paths": [str(work / "debug")], "scan_interval": 0.1, "settle": 0.3},
            "sinks": {"prometheus": {"enabled": False}},
        }
    )
    agent = Agent(build(config, {}))
    agent.start()
    directory = agent.topology.journal.directory
    try:
        deadline = time.monotonic() + (60 if until_entries else 2)
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if until_entries and entries_by_kind(directory)[DEBUG_KIND] >= until_entries:
                break
    finally:
        agent.stop(timeout=20)
    return entries_by_kind(directory)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("debug-agent")
    (folder / "logs").mkdir()
    debug = folder / "debug"
    shutil.copytree(DEBUG / "monitor" / "two_ranks", debug / "monitor_output")
    shutil.copytree(DEBUG / "sanitizer" / "msaicerr_out", debug / "msaicerr_out")
    (debug / "overflow").mkdir()
    shutil.copy(
        DEBUG / "precision" / "overflow" / "anomaly_analyze_1740909600000000000.json",
        debug / "overflow",
    )
    shutil.copy(DEBUG / "sanitizer" / "memcheck.log", debug / "memcheck.log")
    assert run_agent(folder, ENTRIES)[DEBUG_KIND] == ENTRIES
    return folder


def grep(work: Path, *arguments: str) -> list[dict[str, object]]:
    journal = work / "state" / "journal"
    done = subprocess.run(
        [sys.executable, "-m", "npuwatch", "grep", "--journal", str(journal), *arguments, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_grep_module_sanitizer_finds_the_sanitizer_and_msaicerr_findings(work: Path) -> None:
    documents = grep(work, "--module", "SANITIZER")
    assert len(documents) == 12
    assert {d["ascend"]["debug"]["tool"] for d in documents} == {"sanitizer", "msaicerr"}  # type: ignore[index]
    assert all(d["ascend"]["kind"] == DEBUG_KIND for d in documents)  # type: ignore[index]


def test_grep_module_monitor_and_level_error_gives_the_nan_findings(work: Path) -> None:
    documents = grep(work, "--module", "MONITOR", "--level", "ERROR")
    messages = sorted(str(d["message"]) for d in documents)
    assert len(messages) == 3
    assert all("rank 1 at step 37" in message for message in messages)


def test_grep_module_precision_finds_the_overflow_node(work: Path) -> None:
    (document,) = grep(work, "--module", "PRECISION")
    assert str(document["message"]).startswith("overflow on rank 3: Inf/NaN first in Torch.matmul")


def test_the_events_of_the_findings_are_journaled(work: Path) -> None:
    rules: Counter[str] = Counter()
    with JournalReader(work / "state" / "journal") as reader:
        position = Position()
        while page := reader.events_after(position, 256):
            for _, document in page:
                rules[json.loads(document)["rule"]["id"]] += 1
            position = page[-1][0]
    assert rules["debug.training-nan"] == 1  # one event of rank 1, with the count of three
    assert rules["debug.overflow"] == 1
    assert rules["debug.msaicerr-aicore-error"] == 1
    assert rules["debug.sanitizer-illegal-access"] == 2  # one per device: 0, and 1


def test_a_restarted_agent_imports_nothing_again(work: Path) -> None:
    assert run_agent(work, 0)[DEBUG_KIND] == ENTRIES
