"""The profiling importer with the state directory on a real full disk (a 1 MiB tmpfs): its
state files cannot be written, yet every run is imported once, no scan fails, nothing is left
behind, and the list of imported runs is written once there is room, so that a restart imports
nothing twice."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.agent.profiling_figures import SavedFigures
from npuwatch.agent.profiling_stage import ImportSettings, ProfilingImporter
from npuwatch.collector.profiling_runs import run_tracker
from npuwatch.metrics import SelfMetrics
from npuwatch.records import Record
from npuwatch.sinks.prometheus.profiling_metrics import ProfilingMetrics
from tests.agent.harness import wait_until
from tests.conftest import FIXTURES
from tests.journal.full_disk import fill, small_tmpfs

pytestmark = pytest.mark.integration  # each run is read by a child process


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


def importer(root: Path, state: Path, delivered: list[list[Record]]) -> ProfilingImporter:
    metrics = SelfMetrics()
    return ProfilingImporter(
        ImportSettings((root,)),
        run_tracker(state / "profiling-imported.json", 60.0),
        ProfilingMetrics(metrics.registry),
        metrics,
        lambda key, folder, device, records: delivered.append(records),
        threading.Event(),
        saved=SavedFigures(state / "profiling-figures.json"),
    )


def test_a_full_disk_imports_each_run_once_and_the_list_is_written_when_there_is_room(
    tmp_path: Path, disk: Path
) -> None:
    root = tmp_path / "profiling"
    shutil.copytree(FIXTURES / "profiling" / "torch_2rank", root / "job-42")
    state = disk / "state"
    state.mkdir()
    filler = fill(disk)
    delivered: list[list[Record]] = []
    first = importer(root, state, delivered)
    assert first.scan() == 2  # both ranks carry analyse.done
    assert first.scan() == 0  # remembered in memory while the file cannot be written
    assert len(delivered) == 2
    assert sorted(p.name for p in disk.rglob("*")) == ["filler", "state"]

    filler.unlink()
    # Each scan tries the refused write again once its pause (growing from 0.5 s) is over.
    wait_until(lambda: first.scan() == 0 and (state / "profiling-imported.json").is_file(), 10)
    assert len(delivered) == 2
    assert sorted(p.name for p in state.iterdir()) == ["profiling-imported.json"]

    again: list[list[Record]] = []
    assert importer(root, state, again).scan() == 0  # a restart imports nothing twice
    assert again == []
