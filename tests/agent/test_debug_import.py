"""The debugging-tools importer: complete outputs of msprobe, msSanitizer and msaicerr under the
configured folders, into journal entries, rule events and metrics, each output once."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import pytest

from npuwatch.agent.debug_digest import digest_in_child
from npuwatch.agent.debug_stage import DebugImporter, DebugToolsPlan, rule_events
from npuwatch.collector.debug_outputs import find_debug_outputs, output_tracker
from npuwatch.debug_tools import digest_output
from npuwatch.debug_tools.findings import OutputDigest
from npuwatch.handoff import EventRow
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.debug_entries import DEBUG_KIND
from npuwatch.parsers.telemetry import telemetry_record
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.sinks.prometheus.debug_metrics import DebugMetrics
from tests.conftest import FIXTURES

DEBUG = FIXTURES / "debug_tools"
SETTLE = 60.0
COMPARE = "compare_result_rank0_20250302093000.xlsx"
OVERFLOW = "anomaly_analyze_1740909600000000000.json"
MSAICERR = "info_20260415111938"


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


class Rig:
    """An importer on `root`, its state under `state`, and what it delivered."""

    def __init__(self, root: Path, state: Path, clock: Clock, load=digest_output) -> None:  # type: ignore[no-untyped-def]
        self.metrics = SelfMetrics()
        self.debug_metrics = DebugMetrics(self.metrics.registry)
        self.delivered: list[tuple[str, SourceInfo, list[Record], list[EventRow]]] = []
        self.loaded: list[Path] = []

        def loading(kind: str, path: Path) -> OutputDigest:
            self.loaded.append(path)
            return load(kind, path)  # type: ignore[no-any-return]

        self.importer = DebugImporter(
            DebugToolsPlan((root,), scan_interval_s=0.05, settle_s=SETTLE),
            output_tracker(state / "debug-imported.json", SETTLE),
            self.debug_metrics,
            "node-1",
            lambda *delivery: self.delivered.append(delivery),
            threading.Event(),
            events=rule_events(lambda: load_rules([DEFAULT_PACKS])),
            load=loading,
            wall=clock,
        )
        self.clock = clock

    def settle_and_scan(self) -> int:
        self.importer.scan()  # first sight: the settle time starts
        self.clock.now += SETTLE
        return self.importer.scan()

    def value(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)

    def records(self, logger: str | None = None) -> list[Record]:
        found = [record for _, _, records, _ in self.delivered for record in records]
        return [record for record in found if logger is None or record.logger == logger]

    def events(self) -> list[EventRow]:
        return [event for *_, events in self.delivered for event in events]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """One output of each kind, as the tools leave them in a job's folder."""
    folder = tmp_path / "debug"
    precision = folder / "job-7" / "compare"
    precision.mkdir(parents=True)
    shutil.copy(DEBUG / "precision" / "compare_4rank" / COMPARE, precision)
    shutil.copy(DEBUG / "precision" / "overflow" / OVERFLOW, precision)
    shutil.copytree(DEBUG / "monitor" / "two_ranks", folder / "job-7" / "monitor_output")
    logs = folder / "job-7" / "mindstudio_sanitizer_log"
    logs.mkdir()
    shutil.copy(DEBUG / "sanitizer" / "memcheck.log", logs / "mssanitizer_20260415111938_4242.log")
    shutil.copytree(DEBUG / "sanitizer" / "msaicerr_out" / MSAICERR, folder / "msaicerr" / MSAICERR)
    return folder


def test_each_kind_of_output_is_found_once_with_its_unit_of_import(root: Path) -> None:
    found = [(o.kind, o.path.relative_to(root).as_posix()) for o in find_debug_outputs(root)]
    assert found == [
        ("precision", f"job-7/compare/{OVERFLOW}"),
        ("precision", f"job-7/compare/{COMPARE}"),
        ("sanitizer", "job-7/mindstudio_sanitizer_log/mssanitizer_20260415111938_4242.log"),
        ("monitor", "job-7/monitor_output"),
        ("msaicerr", f"msaicerr/{MSAICERR}"),
    ]


def test_nothing_is_imported_before_the_outputs_settled(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock())
    assert rig.importer.scan() == 0
    rig.clock.now += SETTLE - 1
    assert rig.importer.scan() == 0
    rig.clock.now += 1
    assert rig.importer.scan() == 5
    assert rig.loaded and len(rig.loaded) == 5


def test_every_kind_is_imported_once_into_entries_of_its_logger(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock())
    assert rig.settle_and_scan() == 5
    assert rig.importer.scan() == 0  # nothing changed: nothing again
    assert len(rig.loaded) == 5
    precision = rig.records("PRECISION")
    # The compare's first failure and its next 19 failing operators, and the overflow node.
    assert len(precision) == 21
    assert [r.level for r in precision].count("ERROR") == 2
    first = next(r for r in precision if r.message.startswith("precision first failure"))
    assert first.rank == 0
    assert first.message.startswith(
        "precision first failure on rank 0: NPU.npu_fusion_attention.5.forward in layers.5 forward"
    )
    overflow = next(r for r in precision if r.message.startswith("overflow"))
    assert overflow.rank == 3
    monitor = rig.records("MONITOR")
    assert sorted(r.ascend_extra["debug"]["what"] for r in monitor if r.ascend_extra) == [
        "anomaly", "anomaly", "nan", "nan", "rank_summary", "rank_summary", "spike",
    ]  # fmt: skip
    sanitizer = rig.records("SANITIZER")
    assert len(sanitizer) == 11 + 1  # memcheck's 9 errors and 2 warnings, msaicerr's one error
    (aicore,) = [r for r in sanitizer if r.message.startswith("msaicerr AI Core error 0x800000")]
    assert aicore.device == 0 and aicore.level == "ERROR"


def test_entries_are_telemetry_records_the_journal_builds_back_the_same(
    root: Path, tmp_path: Path
) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.settle_and_scan()
    for record in rig.records():
        again = telemetry_record(record.original, DEBUG_KIND)
        assert (again.level, again.logger, again.message, again.rank, again.device) == (
            record.level, record.logger, record.message, record.rank, record.device,
        )  # fmt: skip
        assert again.ascend_extra == record.ascend_extra
    per_output = [[r.offset for r in records] for _, _, records, _ in rig.delivered]
    assert all(offsets == list(range(len(offsets))) for offsets in per_output)


def test_the_rules_turn_the_findings_into_events(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.settle_and_scan()
    by_rule: dict[str, int] = {}
    for event in rig.events():
        by_rule[event.rule] = by_rule.get(event.rule, 0) + event.count
    assert by_rule == {
        "debug.precision-first-failure": 1,
        "debug.overflow": 1,
        "debug.training-nan": 3,  # rank 1 at step 37: the AnomalyNan alert and two NaN groups
        "debug.monitor-anomaly": 1,
        "debug.sanitizer-illegal-access": 5,  # with the out-of-bounds warning
        "debug.sanitizer-memory-leak": 3,
        "debug.sanitizer-uninitialized": 1,
        "debug.sanitizer-finding": 2,  # the unused-memory warning, the tool's internal error
        "debug.msaicerr-aicore-error": 1,
    }
    severities = {event.rule: event.severity for event in rig.events()}
    assert severities["debug.training-nan"] == "critical"


def test_the_metrics_say_what_the_outputs_say(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.settle_and_scan()
    info = {
        "rank": "0",
        "operator": "NPU.npu_fusion_attention.5.forward",
        "layer": "layers.5",
        "source": COMPARE,
    }
    assert rig.value("ascend_precision_first_failure_info", **info) == 1
    assert rig.value("ascend_precision_overflow_nodes_total", rank="3") == 1
    anomaly = {"metric": "grad_reduced norm", "rank": "1", "anomaly": "AnomalyNan"}
    assert rig.value("ascend_monitor_anomalies_total", **anomaly) == 2
    assert rig.value("ascend_monitor_grad_norm", rank="0") == pytest.approx(1.185464, abs=1e-6)
    assert rig.value("ascend_monitor_nan_values", rank="1") == 3
    assert rig.value("ascend_monitor_nan_values", rank="0") == 0
    assert rig.value("ascend_monitor_last_step", rank="1") == 59
    assert rig.value("ascend_sanitizer_errors_total", kind="illegal_write") == 2
    assert rig.value("ascend_sanitizer_errors_total", kind="aicore_error") == 1


def test_a_restart_imports_nothing_again_and_counts_nothing_twice(
    root: Path, tmp_path: Path
) -> None:
    clock = Clock()
    first = Rig(root, tmp_path, clock)
    first.settle_and_scan()
    second = Rig(root, tmp_path, clock)  # the same state folder: a restarted agent
    assert second.settle_and_scan() == 0
    assert second.loaded == [] and second.delivered == []
    for name, labels in (
        ("ascend_sanitizer_errors_total", {"kind": "illegal_write"}),
        ("ascend_monitor_anomalies_total", {"metric": "grad_reduced norm", "rank": "1", "anomaly": "AnomalyNan"}),
        ("ascend_monitor_grad_norm", {"rank": "1"}),
        ("ascend_precision_overflow_nodes_total", {"rank": "3"}),
    ):  # fmt: skip
        assert second.value(name, **labels) == first.value(name, **labels) is not None


def test_a_rewritten_output_is_imported_again_without_counting_it_twice(
    root: Path, tmp_path: Path
) -> None:
    clock = Clock()
    rig = Rig(root, tmp_path, clock)
    rig.settle_and_scan()
    report = root / "job-7" / "mindstudio_sanitizer_log" / "mssanitizer_20260415111938_4242.log"
    report.write_text(
        report.read_text(encoding="utf-8")
        + "====== ERROR: illegal read of size 16\n"
        + "======    at 0x12c0c0019000 on GM in add_custom_kernel\n"
        + "======    in block aiv(3) on device 0\n",
        encoding="utf-8",
    )
    restarted = Rig(root, tmp_path, clock)
    assert restarted.settle_and_scan() == 1
    assert restarted.loaded == [report]
    (new,) = restarted.records()
    assert new.message.startswith("msSanitizer illegal_read: illegal read of size 16")
    assert new.offset == 11  # after the 11 entries of its first import
    assert restarted.value("ascend_sanitizer_errors_total", kind="illegal_read") == 2
    assert restarted.value("ascend_sanitizer_errors_total", kind="illegal_write") == 2


def test_a_deleted_output_keeps_its_counts_and_loses_its_gauges(root: Path, tmp_path: Path) -> None:
    rig = Rig(root, tmp_path, Clock())
    rig.settle_and_scan()
    shutil.rmtree(root / "job-7")
    assert rig.importer.scan() == 0
    assert rig.value("ascend_sanitizer_errors_total", kind="illegal_write") == 2
    assert rig.value("ascend_monitor_grad_norm", rank="0") is None
    assert rig.value("ascend_precision_first_failure_info", rank="0", operator="NPU.npu_fusion_attention.5.forward", layer="layers.5", source=COMPARE) is None  # fmt: skip


def test_a_damaged_output_is_logged_once_and_does_not_stop_the_others(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(kind: str, path: Path) -> OutputDigest:
        if kind == "monitor":
            raise ValueError("the statistics are garbage")
        return digest_output(kind, path)

    rig = Rig(root, tmp_path, Clock(), load=failing)
    with caplog.at_level(logging.WARNING, logger="npuwatch.agent.debug_stage"):
        assert rig.settle_and_scan() == 4
        rig.clock.now += SETTLE
        assert rig.importer.scan() == 0  # not tried again until it changes
    cannot = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(cannot) == 1
    assert "the statistics are garbage" in cannot[0].getMessage()
    assert rig.records("MONITOR") == []
    assert len(rig.records("SANITIZER")) == 12


def test_the_child_process_digest_is_the_digest() -> None:
    path = DEBUG / "sanitizer" / "memcheck.log"
    assert digest_in_child("sanitizer", path) == digest_output("sanitizer", path)


def test_a_child_that_fails_says_why_in_one_line(tmp_path: Path) -> None:
    from npuwatch.agent.child_reader import DigestFailed

    with pytest.raises(DigestFailed, match="unknown kind of output 'nonsense'"):
        digest_in_child("nonsense", tmp_path)
