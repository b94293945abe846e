"""The `ascend_precision_*`, `ascend_monitor_*` and `ascend_sanitizer_*` metrics: what the
imported outputs of the debugging tools say.

The figures of every output imported are kept (with the output, in the importer's state file),
and the metrics are computed from them at each scrape:

- counters (`_total`) sum the latest figures of every output ever imported, so an output
  imported again (a monitor folder that grew, a report written anew) replaces its own share
  instead of adding to it, a restart counts nothing twice, and a deleted output keeps its share
  (a counter never goes down);
- gauges show the outputs still present: each compare's first failure, and per rank the latest
  monitor statistics (the rank's most recently imported monitor folder).

Labels are bounded: `rank` by the job's ranks, `kind` by msSanitizer's error kinds (and
`aicore_error` for msaicerr), `metric` by the monitored data types and statistics, `anomaly` by
msprobe's two anomaly rules; `operator`, `layer` and `source` of a first failure come one per
compare file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


@dataclass(frozen=True)
class OutputFigures:
    """One output's figures, as its digest gave them (debug_tools/findings.py)."""

    kind: str
    figures: dict[str, Any]
    imported_at_s: float
    present: bool = True


class DebugMetrics:
    """A Prometheus collector over the figures of every imported output, fed by the importer."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._lock = threading.Lock()
        self._outputs: dict[str, OutputFigures] = {}
        if registry is not None:
            registry.register(self)

    def update(self, path: str, figures: OutputFigures) -> None:
        """The output's figures now (it was imported, or restored after a restart)."""
        with self._lock:
            self._outputs[path] = figures

    def gone(self, path: str) -> None:
        """The output was deleted: its gauges go, its counts stay."""
        with self._lock:
            figures = self._outputs.get(path)
            if figures is not None:
                self._outputs[path] = OutputFigures(
                    figures.kind, figures.figures, figures.imported_at_s, present=False
                )

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            outputs = list(self._outputs.values())
        return _families(outputs)

    def describe(self) -> Iterator[Metric]:
        return _families([])


def _families(outputs: list[OutputFigures]) -> Iterator[Metric]:
    first_failure = GaugeMetricFamily(
        "ascend_precision_first_failure_info",
        "The first operator a precision compare (msprobe, msit) found beyond tolerance, one per "
        "compare file still present (value 1).",
        labels=("rank", "operator", "layer", "source"),
    )
    overflow = CounterMetricFamily(
        "ascend_precision_overflow_nodes",
        "First Inf/NaN nodes msprobe overflow_check found, by rank.",
        labels=("rank",),
    )
    anomalies = CounterMetricFamily(
        "ascend_monitor_anomalies",
        "Anomaly alerts of msprobe's training monitor (AnomalyTurbulence, AnomalyNan), by "
        "monitored data type and statistic, rank and anomaly rule.",
        labels=("metric", "rank", "anomaly"),
    )
    grad_norm = GaugeMetricFamily(
        "ascend_monitor_grad_norm",
        "Global gradient norm at the last monitored step of the rank (sqrt of the sum of the "
        "squared per-parameter norms of grad_reduced, else grad_unreduced).",
        labels=("rank",),
    )
    nan_values = GaugeMetricFamily(
        "ascend_monitor_nan_values",
        "Monitor statistics rows holding NaN or inf in the rank's latest monitor output.",
        labels=("rank",),
    )
    last_step = GaugeMetricFamily(
        "ascend_monitor_last_step",
        "The last training step the rank's latest monitor output has statistics of.",
        labels=("rank",),
    )
    sanitizer = CounterMetricFamily(
        "ascend_sanitizer_errors",
        "Errors msSanitizer reported (illegal_read, memory_leak, raw_hazard ...) and AI Core "
        "errors msaicerr analysed (aicore_error), by kind.",
        labels=("kind",),
    )
    imported = GaugeMetricFamily(
        "ascend_debug_last_import_timestamp_seconds",
        "When the latest output of the tool family was imported (Unix time).",
        labels=("kind",),
    )
    overflow_counts: dict[str, float] = {}
    anomaly_counts: dict[tuple[str, str, str], float] = {}
    error_counts: dict[str, float] = {}
    latest_rank: dict[str, tuple[float, list[Any]]] = {}
    latest_kind: dict[str, float] = {}
    for output in outputs:
        figures = output.figures
        for rank, count in (figures.get("overflow_nodes") or {}).items():
            overflow_counts[str(rank)] = overflow_counts.get(str(rank), 0) + count
        for metric, rank, rule, count in figures.get("anomalies") or ():
            key = (str(metric), str(rank), str(rule))
            anomaly_counts[key] = anomaly_counts.get(key, 0) + count
        for kind, count in (figures.get("errors") or {}).items():
            error_counts[kind] = error_counts.get(kind, 0) + count
        latest_kind[output.kind] = max(latest_kind.get(output.kind, 0), output.imported_at_s)
        if not output.present:
            continue
        for rank, operator, layer, source in figures.get("first_failures") or ():
            first_failure.add_metric([str(rank), operator, layer, source], 1)
        for row in figures.get("ranks") or ():
            rank = str(row[0])
            if rank not in latest_rank or latest_rank[rank][0] < output.imported_at_s:
                latest_rank[rank] = (output.imported_at_s, row)
    for rank, count in sorted(overflow_counts.items()):
        overflow.add_metric([rank], count)
    for (metric, rank, rule), count in sorted(anomaly_counts.items()):
        anomalies.add_metric([metric, rank, rule], count)
    for kind, count in sorted(error_counts.items()):
        sanitizer.add_metric([kind], count)
    for rank, (_, (_, norm, nans, step)) in sorted(latest_rank.items()):
        if norm is not None:
            grad_norm.add_metric([rank], norm)
        nan_values.add_metric([rank], nans)
        if step is not None:
            last_step.add_metric([rank], step)
    for kind, when in sorted(latest_kind.items()):
        imported.add_metric([kind], when)
    yield from (
        first_failure,
        overflow,
        anomalies,
        grad_norm,
        nan_values,
        last_step,
        sanitizer,
        imported,
    )
