"""The npu-smi poller, against a fake `npu-smi` replaying the real tables of the formats doc."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from npuwatch.collector.npu_smi_command import (
    NpuSmiFailed,
    NpuSmiUnavailable,
    run_npu_smi,
)
from npuwatch.collector.npu_smi_poller import NpuSmiPoller, PollSettings
from npuwatch.journal.documents import to_record
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.npu_smi import parse_npu_smi
from npuwatch.parsers.telemetry import DEVICE_KIND, device_records
from npuwatch.record_schema import LogRecord
from npuwatch.records import Record
from npuwatch.sinks.prometheus.device_metrics import DeviceMetrics
from tests.npu_smi_samples import FAKE_NPU_SMI, load_doc_samples, table_only

MIB = 1 << 20
NOW = 1_790_000_000.0
FAKE = (str(FAKE_NPU_SMI), "info")


@pytest.fixture(scope="module")
def samples() -> dict[str, str]:
    return load_doc_samples()


class FakeDevice:
    """The fake npu-smi's environment: what it replays and whether it fails."""

    def __init__(self, tmp_path: Path) -> None:
        self.output = tmp_path / "npu-smi.out"
        self.environment = {**os.environ, "NPUWATCH_FAKE_NPU_SMI_OUTPUT": str(self.output)}

    def replay(self, text: str) -> None:
        self.output.write_text(text, encoding="utf-8")

    def fail(self, status: int = 1) -> None:
        self.environment["NPUWATCH_FAKE_NPU_SMI_EXIT"] = str(status)

    def recover(self) -> None:
        self.environment.pop("NPUWATCH_FAKE_NPU_SMI_EXIT", None)

    def run(self, command: tuple[str, ...] | list[str], timeout_s: float) -> str:
        return run_npu_smi(command, timeout_s, env=self.environment)


@pytest.fixture
def device(tmp_path: Path) -> FakeDevice:
    return FakeDevice(tmp_path)


class Rig:
    def __init__(self, device: FakeDevice, command: tuple[str, ...] = FAKE) -> None:
        self.metrics = SelfMetrics()
        self.devices = DeviceMetrics(self.metrics.registry)
        self.delivered: list[list[Record]] = []
        self.stop = threading.Event()
        self.poller = NpuSmiPoller(
            PollSettings(command, interval_s=0.05, timeout_s=5),
            self.devices,
            self.metrics,
            self.delivered.append,
            self.stop,
            run=device.run,
            wall=lambda: NOW,
        )

    def gauge(self, name: str, npu: int, chip: int, chip_name: str) -> float | None:
        labels = {"npu": str(npu), "chip": str(chip), "name": chip_name}
        return self.metrics.registry.get_sample_value(name, labels)

    def series(self, name: str) -> int:
        return sum(
            len(family.samples) for family in self.metrics.registry.collect() if family.name == name
        )


def test_a_poll_turns_a_910b_table_into_gauges_in_base_units(
    device: FakeDevice, samples: dict[str, str]
) -> None:
    device.replay(samples["1.1"])
    rig = Rig(device)
    report = rig.poller.poll()
    assert report is not None and len(report.chips) == 3
    assert rig.gauge("ascend_npu_hbm_used_bytes", 0, 0, "910B1") == 4175 * MIB
    assert rig.gauge("ascend_npu_hbm_total_bytes", 0, 0, "910B1") == 65536 * MIB
    assert rig.gauge("ascend_npu_memory_used_bytes", 7, 0, "910B1") == 0
    assert rig.gauge("ascend_npu_temperature_celsius", 7, 0, "910B1") == 48
    assert rig.gauge("ascend_npu_power_watts", 7, 0, "910B1") == 92.7
    assert rig.gauge("ascend_npu_aicore_utilization_ratio", 0, 0, "910B1") == 0.0
    labels = {"npu": "0", "chip": "0", "name": "910B1"}
    value = rig.metrics.registry.get_sample_value
    assert value("ascend_npu_health_status", {**labels, "status": "OK"}) == 1
    assert value("ascend_npu_health_status", {**labels, "status": "Warning"}) == 0
    assert rig.metrics.value("npuwatch_npu_smi_up") == 1
    assert rig.metrics.value("npuwatch_npu_smi_polls_total", {"result": "ok"}) == 1
    assert rig.metrics.value("npuwatch_npu_smi_last_success_timestamp_seconds") == NOW


@pytest.mark.parametrize(
    "section", ["1.2", "1.4", "1.5", "2.1", "2.2#1", "2.3", "3.1", "3.2", "3.4", "4.1", "4.2"]
)
def test_every_chip_of_a_real_table_gets_its_gauges(
    device: FakeDevice, samples: dict[str, str], section: str
) -> None:
    device.replay(samples[section])
    rig = Rig(device)
    report = rig.poller.poll()
    assert report is not None
    expected = parse_npu_smi(samples[section])
    assert len(report.chips) == len(expected.chips) > 0
    # Temperature is in every table variant; one series per chip, none twice.
    assert rig.series("ascend_npu_temperature_celsius") == len(expected.chips)
    assert rig.series("ascend_npu_health_status") >= 4 * len(expected.chips)
    for chip in expected.chips:
        value = rig.gauge("ascend_npu_temperature_celsius", chip.npu_id, chip.chip_id, chip.name)
        assert value == chip.temperature_celsius


def test_a3_has_two_chips_per_npu_and_a_missing_power_reading_is_no_series(
    device: FakeDevice, samples: dict[str, str]
) -> None:
    device.replay(samples["2.1"])
    rig = Rig(device)
    report = rig.poller.poll()
    assert report is not None
    chips = {(chip.npu_id, chip.chip_id): chip for chip in report.chips}
    assert (0, 0) in chips and (0, 1) in chips
    second = chips[0, 1]
    assert second.power_watts is None  # A3's second die prints `-`
    assert rig.gauge("ascend_npu_power_watts", 0, 1, second.name) is None
    assert rig.gauge("ascend_npu_temperature_celsius", 0, 1, second.name) is not None


def test_a_chip_in_warning_is_a_warning_record_and_its_state_set_says_so(
    device: FakeDevice, samples: dict[str, str]
) -> None:
    device.replay(samples["3.2"])
    rig = Rig(device)
    report = rig.poller.poll()
    assert report is not None
    (warned,) = [chip for chip in report.chips if chip.health == "Warning"][:1]
    labels = {"npu": str(warned.npu_id), "chip": str(warned.chip_id), "name": warned.name}
    value = rig.metrics.registry.get_sample_value
    assert value("ascend_npu_health_status", {**labels, "status": "Warning"}) == 1
    assert value("ascend_npu_health_status", {**labels, "status": "OK"}) == 0
    (records,) = rig.delivered
    levels = {(r.device, r.ascend_extra["npu"]["chip"]): r.level for r in records}  # type: ignore[index]
    assert levels[warned.npu_id, warned.chip_id] == "WARNING"
    assert sorted(set(levels.values())) == ["INFO", "WARNING"]


def test_each_poll_delivers_one_device_record_per_chip_with_distinct_offsets(
    device: FakeDevice, samples: dict[str, str]
) -> None:
    device.replay(samples["2.3"])
    rig = Rig(device)
    rig.poller.poll()
    rig.poller.poll()
    first, second = rig.delivered
    chips = len(parse_npu_smi(samples["2.3"]).chips)
    assert len(first) == len(second) == chips
    # The same wall time twice gives the same offsets: a poll sent again is the same entry.
    assert [r.offset for r in first] == [r.offset for r in second]
    assert len({r.offset for r in first}) == chips
    assert all(r.timestamp_us == int(NOW * 1_000_000) for r in first)


def test_a_failing_npu_smi_is_counted_drops_the_readings_and_is_logged_once(
    device: FakeDevice, samples: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    device.replay(samples["1.1"])
    rig = Rig(device)
    assert rig.poller.poll() is not None
    device.fail()
    with caplog.at_level(logging.WARNING, logger="npuwatch.collector.npu_smi_poller"):
        for _ in range(3):
            assert rig.poller.poll() is None
    assert rig.metrics.value("npuwatch_npu_smi_polls_total", {"result": "failed"}) == 3
    assert rig.metrics.value("npuwatch_npu_smi_up") == 0
    assert rig.series("ascend_npu_hbm_used_bytes") == 0  # a stale reading would look healthy
    (line,) = caplog.messages
    assert "exited with status 1" in line and "dcmi module initialize failed" in line
    assert rig.poller.enabled  # tried again next interval
    device.recover()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="npuwatch.collector.npu_smi_poller"):
        assert rig.poller.poll() is not None
    assert caplog.messages == [f"{FAKE[0]} info answers again"]
    assert rig.metrics.value("npuwatch_npu_smi_up") == 1
    assert rig.series("ascend_npu_hbm_used_bytes") == 3


def test_output_without_a_chip_row_counts_as_unreadable(device: FakeDevice) -> None:
    device.replay("npu-smi: command not supported on this board\n")
    rig = Rig(device)
    assert rig.poller.poll() is None
    assert rig.metrics.value("npuwatch_npu_smi_polls_total", {"result": "unreadable"}) == 1
    assert rig.metrics.value("npuwatch_npu_smi_up") == 0


def test_a_hung_npu_smi_is_a_failure_after_the_timeout() -> None:
    with pytest.raises(NpuSmiFailed, match=r"did not answer within 0.2 s"):
        run_npu_smi(["sleep", "5"], timeout_s=0.2)


def test_without_npu_smi_polling_turns_off_with_one_log_line(
    device: FakeDevice, caplog: pytest.LogCaptureFixture
) -> None:
    rig = Rig(device, command=("npu-smi-not-installed-here", "info"))
    with caplog.at_level(logging.INFO, logger="npuwatch.collector.npu_smi_poller"):
        rig.poller.start()
        rig.poller.thread.join(5)
    assert not rig.poller.thread.is_alive()
    assert not rig.poller.enabled
    (line,) = caplog.messages
    assert line.startswith("npu-smi-not-installed-here not found")
    assert "device telemetry is off" in line
    # Absent, not 0: NpuwatchNpuSmiFailing must not page for a host without npu-smi.
    assert rig.metrics.registry.get_sample_value("npuwatch_npu_smi_up") is None
    assert "npuwatch_npu_smi_up" not in generate_latest(rig.metrics.registry).decode()
    with pytest.raises(NpuSmiUnavailable):
        run_npu_smi(["npu-smi-not-installed-here", "info"])


def test_the_poller_thread_polls_every_interval_until_stopped(
    device: FakeDevice, samples: dict[str, str]
) -> None:
    device.replay(samples["1.5"])
    rig = Rig(device)
    rig.poller.start()
    try:
        deadline = threading.Event()
        for _ in range(200):
            if len(rig.delivered) >= 3:
                break
            deadline.wait(0.05)
    finally:
        rig.stop.set()
        rig.poller.thread.join(5)
    assert not rig.poller.thread.is_alive()
    assert len(rig.delivered) >= 3


def test_a_device_record_read_back_from_the_journal_is_a_valid_ecs_document(
    samples: dict[str, str],
) -> None:
    report = parse_npu_smi(table_only(samples["3.4"]))
    when_us = int(NOW * 1_000_000)
    for record in device_records(report, when_us):
        stored = StoredRecord(
            record.timestamp_us, record.level, record.logger, None, [], 0,
            record.offset, record.end_offset, record.original,
        )  # fmt: skip
        source = FileSource("npu-smi@node-1", "npu-smi info", "node-1", DEVICE_KIND)
        again = to_record(stored, source)
        document = LogRecord.model_validate(again.to_document()).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        npu = document["ascend"]["npu"]
        assert document["ascend"]["kind"] == "npu-smi"
        assert document["log"]["logger"] == "NPU-SMI"
        assert document["message"].startswith(f"NPU {npu['id']} chip {npu['chip']} (")
        assert document["ascend"]["device"] == npu["id"]
    processes = [
        entry
        for record in device_records(report, when_us)
        for entry in (record.ascend_extra or {})["npu"].get("processes", [])
    ]
    # Each process goes with its chip (the excerpt cut off some chips: theirs go nowhere).
    chips = {(chip.npu_id, chip.chip_id) for chip in report.chips}
    held = [p for p in report.processes if (p.npu_id, p.chip_id) in chips]
    assert [entry["pid"] for entry in processes] == [p.pid for p in held]
    assert len(held) > 0


def test_the_device_message_reads_at_a_glance(samples: dict[str, str]) -> None:
    first, *_ = device_records(parse_npu_smi(samples["1.1"]), 0)
    # A 910B has no DDR column worth showing (0 / 0): only its HBM.
    assert first.message == "NPU 0 chip 0 (910B1): health OK, 46 °C, 88.4 W, AI Core 0%, " + (
        "HBM 4175/65536 MiB (6%)"
    )
    loaded, *_ = device_records(parse_npu_smi(samples["3.4"]), 0)
    assert loaded.message.endswith("HBM 30710/32768 MiB (94%), memory 4565/15137 MiB (30%)")
