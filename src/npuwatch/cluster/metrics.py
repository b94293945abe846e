"""The correlator's metrics, on a registry passed in: its incidents and its own health.

`ascend_collective_incident_root_cause` is an info-style series per root-cause place of each
open incident, labelled with the place (host, npu, rank) and the incident's kind, and valued
with the number of ranks that were only waiting: the alert's summary reads both. Its labels are
bounded by the open incidents (closed ones leave the series).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from npuwatch import __version__


@dataclass(frozen=True)
class RootCauseSeries:
    incident: str
    kind: str
    host: str
    npu: str
    rank: str
    provisional: bool
    victims: int


class IncidentSeries:
    """A collector of the open incidents, as the service last saw them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self._series: tuple[RootCauseSeries, ...] = ()
        self._open: dict[str, int] = {}
        registry.register(self)

    def show(self, series: Sequence[RootCauseSeries], open_by_kind: dict[str, int]) -> None:
        with self._lock:
            self._series = tuple(series)
            self._open = dict(open_by_kind)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            series, open_by_kind = self._series, self._open
        return _families(series, open_by_kind)

    def describe(self) -> Iterator[Metric]:
        return _families((), {})


def _families(series: Sequence[RootCauseSeries], open_by_kind: dict[str, int]) -> Iterator[Metric]:
    roots = GaugeMetricFamily(
        "ascend_collective_incident_root_cause",
        "A root-cause place of an open collective incident; the value is the number of ranks "
        "that were only waiting for the incident's root cause.",
        labels=("incident", "kind", "host", "npu", "rank", "provisional"),
    )
    for one in series:
        labels = [
            one.incident,
            one.kind,
            one.host,
            one.npu,
            one.rank,
            "true" if one.provisional else "false",
        ]
        roots.add_metric(labels, float(one.victims))
    yield roots
    opened = GaugeMetricFamily(
        "ascend_collective_incidents_open",
        "Collective incidents not closed, by kind.",
        labels=("kind",),
    )
    for kind, count in sorted(open_by_kind.items()):
        opened.add_metric([kind], float(count))
    yield opened


class CorrelatorMetrics:
    """Every metric of the correlator."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.incidents = IncidentSeries(r)
        self.first_verdict = Histogram(
            "npuwatch_correlate_first_verdict_seconds",
            "From an incident's first failure (log time, UTC) to its first verdict written.",
            buckets=(5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200),
            registry=r,
        )
        self.read_lag = Gauge(
            "npuwatch_correlate_read_lag_seconds",
            "Since the last read round that read every index to its end.",
            registry=r,
        )
        self.documents = Counter(
            "npuwatch_correlate_documents_read",
            "Documents read from the search engine, by kind: process, event, heartbeat, "
            "incident, unreadable.",
            ["kind"],
            registry=r,
        )
        self.writes = Counter(
            "npuwatch_correlate_incident_writes",
            "Incident documents written, by result: created, revised, closed, conflict "
            "(another correlator wrote first; the incident was read again).",
            ["result"],
            registry=r,
        )
        self.forgotten = Counter(
            "npuwatch_correlate_topology_forgotten",
            "Topology documents of processes and agents gone for longer than the lookback, "
            "by result: deleted from the topology index, kept (an agent wrote it again since "
            "it was read, or another correlator deleted it).",
            ["result"],
            registry=r,
        )
        self.errors = Counter(
            "npuwatch_correlate_errors",
            "Failures, by stage: read, engine (the root-cause engine), write, forget (deleting "
            "topology documents of processes long gone).",
            ["stage"],
            registry=r,
        )
        self.processes = Gauge(
            "npuwatch_correlate_processes",
            "Process documents the correlator holds (its memory grows with them).",
            registry=r,
        )
        build = Gauge(
            "npuwatch_build_info", "The version, as a label (always 1).", ["version"], registry=r
        )
        build.labels(__version__).set(1)
