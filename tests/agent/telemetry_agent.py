"""A real agent that polls a fake npu-smi and imports the fixture profiling runs, for the tests
of telemetry entries in the journal, on /metrics and in the search engine."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import Config
from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.parsers.telemetry import DEVICE_KIND, PROFILING_KIND
from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profiles
from tests.conftest import FIXTURES
from tests.npu_smi_samples import FAKE_NPU_SMI, load_doc_samples

PROFILING_RUNS = FIXTURES / "profiling" / "torch_2rank"
SAMPLE = "3.2"
"""The real table the fake npu-smi replays: a 910A host with one NPU in health Warning."""
OUTPUT_VARIABLE = "NPUWATCH_FAKE_NPU_SMI_OUTPUT"


@dataclass
class TelemetryJournal:
    directory: Path
    entries: Counter[str]
    """Journal entries by kind (npu-smi, profiling, or a log kind)."""
    polls: int
    """Device entries / chips per poll."""


def entries_by_kind(directory: Path) -> Counter[str]:
    counted: Counter[str] = Counter()
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            for _, block in page:
                counted[block.source.kind or "other"] += len(decode_block(block.payload))
            position = page[-1][0]
    return counted


@contextmanager
def telemetry_agent(work: Path) -> Iterator[Agent]:
    """The agent on an empty log tree, a fake npu-smi polled every 0.2 s and the fixture's
    two-rank torch_npu run under its profiling folder; stopped (drained) on leaving."""
    work.mkdir(parents=True, exist_ok=True)
    output = work / "npu-smi.out"
    output.write_text(load_doc_samples()[SAMPLE], encoding="utf-8")
    os.environ[OUTPUT_VARIABLE] = str(output)  # the fake reads it; the agent passes it on
    shutil.copytree(PROFILING_RUNS, work / "profiling" / "job-42")
    (work / "logs").mkdir()
    config = Config.model_validate(
        {
            "agent": {"state_directory": str(work / "state"), "host_name": "node-1"},
            "sources": {"roots": [str(work / "logs")], "rescan_interval": 0.3},
            "journal": {"commit_interval": 0.05, "sync": "normal"},
            "devices": {"npu_smi_command": f"{FAKE_NPU_SMI} info", "interval": 1},
            "profiling": {"paths": [str(work / "profiling")], "scan_interval": 0.2},
            "sinks": {"prometheus": {"listen": "127.0.0.1:0"}},
        }
    )
    agent = Agent(build(config, {}))
    agent.start()
    try:
        yield agent
    finally:
        agent.stop(timeout=20)
        os.environ.pop(OUTPUT_VARIABLE, None)


def chip_count(agent: Agent) -> int:
    """Chips the agent has readings of (series of the temperature gauge)."""
    return sum(
        len(family.samples)
        for family in agent.metrics.registry.collect()
        if family.name == "ascend_npu_temperature_celsius"
    )


def journal_telemetry(work: Path, polls: int = 3) -> TelemetryJournal:
    """Run the telemetry agent until the journal holds `polls` device readings and the
    profiling runs, and return what it holds."""
    chips = 0
    # Every operator of every rank: the stop does not wait for an import in progress (a run
    # not yet journaled is imported again at the next start), so waiting for less is a race.
    operators = sum(len(operator_table(run)) for run in load_profiles(PROFILING_RUNS))
    with telemetry_agent(work) as agent:
        directory = agent.topology.journal.directory
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            counted = entries_by_kind(directory) if directory.exists() else Counter()
            chips = chip_count(agent)
            if (
                counted[PROFILING_KIND] >= operators
                and chips
                and counted[DEVICE_KIND] >= polls * chips
            ):
                break
    counted = entries_by_kind(directory)
    assert counted[PROFILING_KIND] > 0 and counted[DEVICE_KIND] > 0, counted
    return TelemetryJournal(directory, counted, chips)
