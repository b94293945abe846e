"""The `ascend_npu_*` gauges: the latest `npu-smi info` reading of every chip, in base units.

The poller hands over each report; `collect` turns the latest one into metric families when
Prometheus scrapes. When a poll fails the readings are dropped rather than kept: a stale
temperature looks like a healthy one, while a missing series plus `npuwatch_npu_smi_up == 0`
says what is true (and the NpuSmiFailing alert says it aloud).

Labels are npu, chip and name: bounded by the hardware (at most 16 chips a host).
Health is a state set, as kube-state-metrics writes them: one series per chip and known status,
1 for the status the chip is in and 0 for the others, so that `== 1` selects the current one
and a status change never leaves an old series at 1.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from npuwatch.parsers.npu_smi import NpuChip, NpuSmiReport

HEALTH_STATES = ("OK", "Warning", "Alarm", "Critical")
"""The statuses npu-smi prints in its Health column (any other one is added as it is seen)."""

_LABELS = ("npu", "chip", "name")
_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("ascend_npu_hbm_used_bytes", "HBM in use on the chip.", "hbm_used_bytes"),
    ("ascend_npu_hbm_total_bytes", "HBM on the chip.", "hbm_total_bytes"),
    (
        "ascend_npu_memory_used_bytes",
        "Device DDR memory in use (the Memory-Usage column; 0 on cards that only have HBM).",
        "memory_used_bytes",
    ),
    ("ascend_npu_memory_total_bytes", "Device DDR memory.", "memory_total_bytes"),
    ("ascend_npu_temperature_celsius", "Chip temperature.", "temperature_celsius"),
    ("ascend_npu_power_watts", "Power drawn by the NPU.", "power_watts"),
    (
        "ascend_npu_aicore_utilization_ratio",
        "AI Core busy, 0 to 1 (npu-smi's AICore(%) / 100).",
        "aicore_ratio",
    ),
)


class DeviceMetrics:
    """The latest device readings as Prometheus gauges; a collector fed by the npu-smi poller."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._lock = threading.Lock()
        self._chips: tuple[NpuChip, ...] = ()
        if registry is not None:
            registry.register(self)

    def update(self, report: NpuSmiReport) -> None:
        with self._lock:
            self._chips = report.chips

    def clear(self) -> None:
        """Forget the readings (npu-smi failed: the old values are no longer true)."""
        with self._lock:
            self._chips = ()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            chips = self._chips
        return _families(chips)

    def describe(self) -> Iterator[Metric]:
        return _families(())


def _families(chips: tuple[NpuChip, ...]) -> Iterator[Metric]:
    for name, documentation, attribute in _GAUGES:
        family = GaugeMetricFamily(name, documentation, labels=_LABELS)
        for chip in chips:
            value = getattr(chip, attribute)
            if value is not None:
                family.add_metric(_label_values(chip), float(value))
        yield family
    health = GaugeMetricFamily(
        "ascend_npu_health_status",
        "1 for the health status npu-smi reports for the chip, 0 for the other statuses.",
        labels=(*_LABELS, "status"),
    )
    for chip in chips:
        states = HEALTH_STATES if chip.health in HEALTH_STATES else (*HEALTH_STATES, chip.health)
        for state in states:
            health.add_metric([*_label_values(chip), state], 1.0 if state == chip.health else 0.0)
    yield health


def _label_values(chip: NpuChip) -> list[str]:
    return [str(chip.npu_id), str(chip.chip_id), chip.name]
