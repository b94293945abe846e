"""The profiling importer: complete runs under the configured folders, into journal entries and
gauges, each run once."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path

import pytest

from npuwatch.agent.profiling_figures import SavedFigures
from npuwatch.agent.profiling_stage import ImportSettings, ProfilingImporter
from npuwatch.child_process import ChildStopped
from npuwatch.collector.finished_outputs import signature_of
from npuwatch.collector.profiling_runs import run_tracker
from npuwatch.journal.documents import to_record
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.telemetry import PROFILING_KIND
from npuwatch.profiling.msprof.layout import find_profile_runs
from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profiles
from npuwatch.profiling.steps import rank_steps
from npuwatch.record_schema import LogRecord
from npuwatch.records import Record
from npuwatch.sinks.prometheus.profiling_metrics import ProfilingMetrics
from tests.conftest import FIXTURES

TORCH_RUNS = FIXTURES / "profiling" / "torch_2rank"
MSPROF_RUNS = FIXTURES / "profiling" / "msprof"
SETTLE = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


class Rig:
    """An importer on `root`, its state file under `state`, and what it delivered."""

    def __init__(self, root: Path, state: Path, clock: Clock, top: int = 20, load=None) -> None:  # type: ignore[no-untyped-def]
        self.metrics = SelfMetrics()
        self.gauges = ProfilingMetrics(self.metrics.registry, top=top)
        self.delivered: list[tuple[str, Path, int | None, list[Record]]] = []
        self.importer = ProfilingImporter(
            ImportSettings((root,), scan_interval_s=0.05),
            run_tracker(state / "imported.json", SETTLE),
            self.gauges,
            self.metrics,
            lambda *entry: self.delivered.append(entry),
            threading.Event(),
            **({} if load is None else {"load": load}),
            wall=clock,
            saved=SavedFigures(state / "figures.json"),
        )

    def value(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)

    def records(self) -> list[Record]:
        return [record for *_, records in self.delivered for record in records]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "profiling"
    shutil.copytree(TORCH_RUNS, folder / "job-42")
    return folder


def test_a_finished_torch_run_is_imported_at_once_one_entry_per_operator_and_rank(
    root: Path, tmp_path: Path
) -> None:
    rig = Rig(root, tmp_path, Clock())
    assert rig.importer.scan() == 2  # both ranks carry analyse.done
    expected = {run.rank: operator_table(run) for run in load_profiles(root)}
    by_device = {device: records for _, _, device, records in rig.delivered}
    assert sorted(by_device) == [0, 1]
    for device, records in by_device.items():
        table = expected[device]
        assert len(records) == len(table) > 0
        slowest = records[0].ascend_extra["profiling"]  # type: ignore[index]
        assert slowest["name"] == table.iloc[0]["op_name"]
        assert slowest["count"] == int(table.iloc[0]["count"])
        assert slowest["total_us"] == pytest.approx(float(table.iloc[0]["total_us"]))
        assert [r.offset for r in records] == list(range(len(records)))
    assert rig.value("npuwatch_profiling_runs_total", result="ok") == 2  # one per run folder


def test_the_gauges_give_each_device_its_operator_types_step_time_and_cube_use(
    root: Path, tmp_path: Path
) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.importer.scan()
    for run in load_profiles(root):
        device = str(run.rank)
        table = operator_table(run)
        matmul = table[table["op_type"] == "MatMulV2"]
        mean_s = matmul["total_us"].sum() / matmul["count"].sum() / 1e6
        assert rig.value(
            "ascend_op_duration_seconds", device=device, op_type="MatMulV2"
        ) == pytest.approx(mean_s)
        steps = rank_steps(run, run.label)
        assert steps is not None
        assert rig.value("ascend_profiling_step_time_seconds", device=device) == pytest.approx(
            steps.step_us / 1e6
        )
        ratio = rig.value("ascend_profiling_aicore_utilization_ratio", device=device)
        assert ratio is not None and 0 < ratio < 1
        shares = [
            sample.value
            for family in rig.metrics.registry.collect()
            if family.name == "ascend_op_time_ratio"
            for sample in family.samples
            if sample.labels["device"] == device
        ]
        assert sum(shares) == pytest.approx(1.0)
    # The fixture's rank 1 computes slower: its step time gauge says so.
    fast = rig.value("ascend_profiling_step_time_seconds", device="0")
    slow = rig.value("ascend_profiling_step_time_seconds", device="1")
    assert fast is not None and slow is not None and slow > fast


def test_operator_types_beyond_the_top_are_summed_as_other(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock(), top=2)
    rig.importer.scan()
    types = {
        sample.labels["op_type"]
        for family in rig.metrics.registry.collect()
        if family.name == "ascend_op_duration_seconds"
        for sample in family.samples
        if sample.labels["device"] == "0"
    }
    assert len(types) == 3 and "other" in types


def test_a_run_is_imported_once_even_across_restarts_and_again_when_rewritten(
    root: Path, tmp_path: Path
) -> None:
    clock = Clock()
    first = Rig(root, tmp_path, clock)
    assert first.importer.scan() == 2
    assert first.importer.scan() == 0
    again = Rig(root, tmp_path, clock)  # a restarted agent, same state folder
    assert again.importer.scan() == 0
    # Profiled anew into the same folder: a changed file makes it a new run.
    (rank0,) = [run for run in find_profile_runs(root) if "worker0" in run.name]
    kernels = rank0 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    kernels.write_bytes(kernels.read_bytes())
    os.utime(kernels, ns=(1, signature_of(rank0).newest_ns + 10**9))  # type: ignore[union-attr]
    assert again.importer.scan() == 1
    (key_before,) = [key for key, _, device, _ in first.delivered if device == 0]
    (key_after,) = [key for key, _, device, _ in again.delivered if device == 0]
    assert key_before != key_after  # new entries, not a replay of the old ones


def gauges(rig: Rig) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in rig.metrics.registry.collect()
        if family.name.startswith(("ascend_op_", "ascend_profiling_"))
        for sample in family.samples
    }


def test_a_restarted_agent_shows_the_gauges_of_the_runs_it_imported_before(
    root: Path, tmp_path: Path
) -> None:
    """The runs are not read again after a restart, but the dashboard must not go blank."""
    clock = Clock()
    first = Rig(root, tmp_path, clock, top=2)
    assert first.importer.scan() == 2
    before = gauges(first)
    assert len({labels for _, labels in before}) > 4  # both devices, several operator types
    again = Rig(root, tmp_path, clock, top=2)
    assert gauges(again) == before  # before any scan
    assert again.importer.scan() == 0


def test_an_unreadable_figures_file_leaves_the_gauges_empty_with_one_warning(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "figures.json").write_text('{"version": 1, "runs": [{"device": "0"}]}')
    with caplog.at_level(logging.WARNING):
        rig = Rig(root, tmp_path, Clock())
    assert gauges(rig) == {}
    (line,) = caplog.messages
    assert "figures.json is unreadable (KeyError)" in line
    assert rig.importer.scan() == 2 and gauges(rig) != {}


def test_an_msprof_run_without_a_marker_waits_until_its_files_settle(tmp_path: Path) -> None:
    root = tmp_path / "profiling"
    shutil.copytree(MSPROF_RUNS, root)
    clock = Clock()
    rig = Rig(root, tmp_path, clock)
    assert rig.importer.scan() == 0  # first sight: it may still be written
    clock.now += SETTLE / 2
    (run,) = find_profile_runs(root)
    extra = run / "mindstudio_profiler_output" / "README.txt"
    extra.write_text("still exporting\n", encoding="utf-8")
    assert rig.importer.scan() == 0  # changed: the settle time starts again
    clock.now += SETTLE - 1
    assert rig.importer.scan() == 0
    clock.now += 1
    assert rig.importer.scan() == 1
    (entry,) = rig.delivered
    assert len(entry[3]) > 0


def test_an_unreadable_run_is_logged_once_and_left_until_it_changes(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(path: Path) -> list[object]:
        raise OSError(5, "Input/output error")

    rig = Rig(root, tmp_path, Clock(), load=broken)
    with caplog.at_level(logging.WARNING, logger="npuwatch.agent.profiling_stage"):
        assert rig.importer.scan() == 0
        assert rig.importer.scan() == 0
    assert rig.value("npuwatch_profiling_runs_total", result="failed") == 2  # two runs, once
    assert len(caplog.messages) == 2
    assert all(
        "cannot be read" in line and "Input/output error" in line for line in caplog.messages
    )
    assert rig.delivered == []


def test_a_run_with_nothing_to_import_is_counted_as_empty(tmp_path: Path) -> None:
    root = tmp_path / "profiling"
    output = root / "w_1_20250301080000123_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    (output / "kernel_details.csv").write_text("Name,Type,Duration(us)\n", encoding="utf-8")
    (output / "analyse.done").write_text("", encoding="utf-8")
    rig = Rig(root, tmp_path, Clock())
    assert rig.importer.scan() == 0
    assert rig.value("npuwatch_profiling_runs_total", result="empty") == 1


def test_an_operator_entry_read_back_from_the_journal_is_a_valid_ecs_document(
    root: Path, tmp_path: Path
) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.importer.scan()
    key, folder, device, records = rig.delivered[0]
    for record in records[:20]:
        stored = StoredRecord(
            record.timestamp_us, record.level, record.logger, None, [], 0,
            record.offset, record.end_offset, record.original,
        )  # fmt: skip
        source = FileSource(key, str(folder), "node-1", PROFILING_KIND, None, device)
        document = LogRecord.model_validate(to_record(stored, source).to_document()).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        operator = document["ascend"]["profiling"]
        assert document["ascend"]["kind"] == "profiling"
        assert document["ascend"]["device"] == device
        assert operator["run"] == folder.name
        assert document["message"].startswith(f"{operator['name']} ({operator['type']}, ")
        assert document["@timestamp"].startswith("2025-03-01")  # when the run was taken


def test_a_run_whose_reader_is_stopped_with_the_agent_is_imported_by_the_next_start(
    root: Path, tmp_path: Path
) -> None:
    def stopped(folder: Path) -> list[object]:
        raise ChildStopped("the reader was stopped with the agent")

    first = Rig(root, tmp_path, Clock(), load=stopped)
    assert first.importer.scan() == 0
    assert first.value("npuwatch_profiling_runs_total", result="failed") in (None, 0.0)
    assert Rig(root, tmp_path, Clock()).importer.scan() == 2  # nothing was taken as done
