"""The `ascend_op_*` and `ascend_profiling_*` gauges: figures of the latest imported profiling run
of each device.

A profiling run is a snapshot of a few steps, taken now and then, so these are gauges of the
latest run, not rates. Labels are bounded: `device` by the NPUs of a host (the run's device or
rank id, `unknown` when the run does not say), `op_type` by the `top` slowest operator types of
the run (the rest are summed under `other`, so that the shares still add up).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

OTHER = "other"


@dataclass(frozen=True)
class OperatorTypeFigures:
    """One operator type of a run: how often it ran and for how long in all."""

    op_type: str
    count: int
    total_s: float


@dataclass(frozen=True)
class RunFigures:
    """What a run says about one device, as the gauges show it."""

    device: str
    operator_types: Sequence[OperatorTypeFigures]
    step_time_s: float | None
    aicore_ratio: float | None
    imported_at_s: float


class ProfilingMetrics:
    """A Prometheus collector of the latest run's figures per device, fed by the importer."""

    def __init__(self, registry: CollectorRegistry | None = None, top: int = 20) -> None:
        self.top = top
        self._lock = threading.Lock()
        self._runs: dict[str, RunFigures] = {}
        if registry is not None:
            registry.register(self)

    def update(self, figures: RunFigures) -> None:
        ranked = sorted(figures.operator_types, key=lambda t: t.total_s, reverse=True)
        kept = list(ranked[: self.top])
        rest = ranked[self.top :]
        if rest:
            kept.append(
                OperatorTypeFigures(OTHER, sum(t.count for t in rest), sum(t.total_s for t in rest))
            )
        with self._lock:
            self._runs[figures.device] = RunFigures(
                figures.device,
                kept,
                figures.step_time_s,
                figures.aicore_ratio,
                figures.imported_at_s,
            )

    def restore(self, figures: RunFigures) -> None:
        """Show figures saved from an earlier `update` as they are (already ranked and cut)."""
        with self._lock:
            self._runs[figures.device] = figures

    def latest(self) -> list[RunFigures]:
        """The figures shown now, one per device (to be saved across restarts)."""
        with self._lock:
            return list(self._runs.values())

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            runs = list(self._runs.values())
        return _families(runs)

    def describe(self) -> Iterator[Metric]:
        return _families([])


def _families(runs: list[RunFigures]) -> Iterator[Metric]:
    duration = GaugeMetricFamily(
        "ascend_op_duration_seconds",
        "Mean duration of one launch of the operator type in the device's latest profiling run "
        "(the slowest types by total time; the rest as op_type=other).",
        labels=("device", "op_type"),
    )
    share = GaugeMetricFamily(
        "ascend_op_time_ratio",
        "Share of the run's operator time spent in the operator type, 0 to 1.",
        labels=("device", "op_type"),
    )
    step = GaugeMetricFamily(
        "ascend_profiling_step_time_seconds",
        "Mean step time of the device's latest profiling run (step_trace_time).",
        labels=("device",),
    )
    aicore = GaugeMetricFamily(
        "ascend_profiling_aicore_utilization_ratio",
        "AI Core busy time over kernel time in the device's latest profiling run, 0 to 1.",
        labels=("device",),
    )
    imported = GaugeMetricFamily(
        "ascend_profiling_last_import_timestamp_seconds",
        "When the device's latest profiling run was imported (Unix time).",
        labels=("device",),
    )
    for run in runs:
        total = sum(t.total_s for t in run.operator_types)
        for figures in run.operator_types:
            if figures.count:
                duration.add_metric([run.device, figures.op_type], figures.total_s / figures.count)
            if total > 0:
                share.add_metric([run.device, figures.op_type], figures.total_s / total)
        if run.step_time_s is not None:
            step.add_metric([run.device], run.step_time_s)
        if run.aicore_ratio is not None:
            aicore.add_metric([run.device], run.aicore_ratio)
        imported.add_metric([run.device], run.imported_at_s)
    yield from (duration, share, step, aicore, imported)
