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
compare file. Which families there are, and how each is read from the figures, is the
chooser's data (npuwatch.debug_tools.FAMILIES).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npuwatch.debug_tools import FAMILIES, Family


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
    """Every family of the chooser (npuwatch.debug_tools.FAMILIES), read as its `reading` says,
    then when each kind was last imported."""
    for family in FAMILIES:
        if family.reading == "sum":
            yield _summed(family, outputs)
        elif family.reading == "present":
            yield _present(family, outputs)
        else:
            yield _latest_by_rank(family, outputs)
    imported = GaugeMetricFamily(
        "ascend_debug_last_import_timestamp_seconds",
        "When the latest output of the tool family was imported (Unix time).",
        labels=("kind",),
    )
    latest_kind: dict[str, float] = {}
    for output in outputs:
        latest_kind[output.kind] = max(latest_kind.get(output.kind, 0), output.imported_at_s)
    for kind, when in sorted(latest_kind.items()):
        imported.add_metric([kind], when)
    yield imported


def _summed(family: Family, outputs: list[OutputFigures]) -> Metric:
    """A counter over every output ever imported: a figure maps a label value to a count, or
    holds rows of label values ending with a count."""
    counts: dict[tuple[str, ...], float] = {}
    for output in outputs:
        figure = output.figures.get(family.figure) or ()
        pairs = figure.items() if isinstance(figure, dict) else ((r[:-1], r[-1]) for r in figure)
        for labels, count in pairs:
            key = tuple(map(str, labels)) if isinstance(labels, list | tuple) else (str(labels),)
            counts[key] = counts.get(key, 0) + count
    metric = CounterMetricFamily(family.name, family.help, labels=family.labels)
    for key, count in sorted(counts.items()):
        metric.add_metric(list(key), count)
    return metric


def _present(family: Family, outputs: list[OutputFigures]) -> Metric:
    """1 per row of label values of the outputs still present."""
    metric = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for output in outputs:
        if output.present:
            for row in output.figures.get(family.figure) or ():
                metric.add_metric([str(value) for value in row], 1)
    return metric


def _latest_by_rank(family: Family, outputs: list[OutputFigures]) -> Metric:
    """Per rank, the `column` of the row of its most recently imported output still present."""
    latest: dict[str, tuple[float, list[Any]]] = {}
    for output in outputs:
        if not output.present:
            continue
        for row in output.figures.get(family.figure) or ():
            rank = str(row[0])
            if rank not in latest or latest[rank][0] < output.imported_at_s:
                latest[rank] = (output.imported_at_s, row)
    metric = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for rank, (_, row) in sorted(latest.items()):
        if row[family.column] is not None:
            metric.add_metric([rank], row[family.column])
    return metric
