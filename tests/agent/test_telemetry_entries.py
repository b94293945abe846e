"""Device readings and profiling operators through the real agent: journal entries next to the
logs, gauges on /metrics, and `grep` over both."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from npuwatch.parsers.npu_smi import parse_npu_smi
from npuwatch.parsers.telemetry import DEVICE_KIND, PROFILING_KIND
from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profiles
from tests.agent.telemetry_agent import (
    PROFILING_RUNS,
    SAMPLE,
    TelemetryJournal,
    journal_telemetry,
    telemetry_agent,
)
from tests.conftest import REPO
from tests.npu_smi_samples import load_doc_samples


@pytest.fixture(scope="module")
def journaled(tmp_path_factory: pytest.TempPathFactory) -> TelemetryJournal:
    return journal_telemetry(tmp_path_factory.mktemp("telemetry"))


def grep(journal: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npuwatch", "grep", "--journal", str(journal), *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )


def test_every_poll_is_one_entry_per_chip_and_every_operator_of_each_rank_one_entry(
    journaled: TelemetryJournal,
) -> None:
    chips = len(parse_npu_smi(load_doc_samples()[SAMPLE]).chips)
    assert journaled.polls == chips
    assert journaled.entries[DEVICE_KIND] % chips == 0
    assert journaled.entries[DEVICE_KIND] >= 3 * chips
    operators = sum(len(operator_table(run)) for run in load_profiles(PROFILING_RUNS))
    assert journaled.entries[PROFILING_KIND] == operators  # each run once, all its operators


def test_grep_finds_the_chip_in_warning_among_the_device_readings(
    journaled: TelemetryJournal,
) -> None:
    warned = [c for c in parse_npu_smi(load_doc_samples()[SAMPLE]).chips if c.health != "OK"]
    result = grep(journaled.directory, "--module", "NPU-SMI", "--level", "WARNING", "--json")
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    assert documents and len(documents) % len(warned) == 0
    assert {(d["ascend"]["npu"]["id"], d["ascend"]["npu"]["health"]) for d in documents} == {
        (chip.npu_id, chip.health) for chip in warned
    }
    assert all(d["ascend"]["kind"] == "npu-smi" for d in documents)


def test_grep_by_device_gives_that_npus_readings_only(journaled: TelemetryJournal) -> None:
    chips = parse_npu_smi(load_doc_samples()[SAMPLE]).chips
    npu = chips[-1].npu_id
    result = grep(journaled.directory, "--module", "NPU-SMI", "--device", str(npu), "--json")
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    on_that_npu = sum(chip.npu_id == npu for chip in chips)
    assert len(documents) == journaled.entries[DEVICE_KIND] // len(chips) * on_that_npu
    assert {d["ascend"]["npu"]["id"] for d in documents} == {npu}


def test_grep_searches_the_operators_of_the_imported_runs(journaled: TelemetryJournal) -> None:
    result = grep(journaled.directory, "--module", "PROFILING", "MatMulV2", "--json")
    assert result.returncode == 0, result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    expected = sum(
        int((operator_table(run)["op_type"] == "MatMulV2").sum())
        for run in load_profiles(PROFILING_RUNS)
    )
    assert len(documents) == expected > 0
    assert {d["ascend"]["profiling"]["type"] for d in documents} == {"MatMulV2"}
    assert {d["ascend"]["device"] for d in documents} == {0, 1}


def test_metrics_has_the_device_gauges_and_the_profiling_gauges(tmp_path: Path) -> None:
    expected = (
        "ascend_npu_hbm_used_bytes{",
        "ascend_npu_temperature_celsius{",
        'ascend_npu_health_status{chip="0",name="xxx",npu="3",status="Warning"} 1.0',
        "npuwatch_npu_smi_up 1.0",
        'ascend_op_duration_seconds{device="0",op_type="MatMulV2"}',
        'ascend_profiling_step_time_seconds{device="1"}',
        'npuwatch_profiling_runs_total{result="ok"} 2.0',
    )
    body = ""
    with telemetry_agent(tmp_path) as agent:
        assert agent.metrics_server is not None
        host, port = agent.metrics_server.address
        url = f"http://{host}:{port}/metrics"
        deadline = time.monotonic() + 60  # the first poll and both runs' imports
        while time.monotonic() < deadline:
            body = urllib.request.urlopen(url, timeout=5).read().decode()
            if all(name in body for name in expected):
                break
            time.sleep(0.2)
    missing = [name for name in expected if name not in body]
    assert not missing, f"not on /metrics: {missing}"
