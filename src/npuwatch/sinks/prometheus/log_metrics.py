"""The `ascend_*` metrics: what the logs say, counted as the journal commits it.

The journal thread calls `LogMetrics.observe_tally` for each block it commits (150,000 records
a second on a busy host) with the block's tally, counted while the block was encoded: records
by `(level, module)`, codes by `(code, module)`, the newest time. Only the distinct pairs, a few
dozen a block, are mapped to label values and added to plain dicts under a lock.
`collect` turns the dicts into metric families when Prometheus scrapes.

Every label is bounded (see `labels`); as a last resort each metric keeps at most
`max_label_sets` label sets and counts any further ones under a single set of `other` values.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Protocol, get_args

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from npuwatch.journal.block import BlockTally, tally_of
from npuwatch.parsers.telemetry import TELEMETRY_KINDS
from npuwatch.records import Record
from npuwatch.rules.model import Severity
from npuwatch.sinks.prometheus.labels import CANN_CODES, KINDS, LEVELS, NONE, OTHER
from npuwatch.vocabulary import CANN_MODULES

MAX_LABEL_SETS = 2000
"""Label sets kept per metric before new ones are counted as `other` (a bound on memory and on
the series Prometheus stores, should the vocabularies grow)."""

_SEVERITIES = frozenset(get_args(Severity))


class EventSummary(Protocol):
    """What `observe_events` reads of an event: a journal `EventRow` has it."""

    @property
    def rule(self) -> str: ...

    @property
    def severity(self) -> str: ...

    @property
    def category(self) -> str | None: ...


class _Counts:
    """Counts by label values, with at most `limit` distinct label sets, and when each set was
    first counted (exported as the counter's `_created` sample: the alert rules tell by it a
    series born with a fresh event from old totals Prometheus had not scraped yet)."""

    __slots__ = ("_limit", "_other", "_wall", "created", "values")

    def __init__(self, arity: int, limit: int, wall: Callable[[], float]) -> None:
        self.values: dict[tuple[str, ...], float] = {}
        self.created: dict[tuple[str, ...], float] = {}
        self._other = (OTHER,) * arity
        self._limit = limit
        self._wall = wall

    def add(self, labels: tuple[str, ...], amount: float) -> None:
        values = self.values
        if labels in values:
            values[labels] += amount
            return
        if len(values) >= self._limit:
            labels = self._other
            if labels in values:
                values[labels] += amount
                return
        values[labels] = amount
        self.created[labels] = self._wall()

    def samples(self) -> list[tuple[tuple[str, ...], float, float]]:
        """(labels, count, created) of every label set."""
        created = self.created
        return [(labels, value, created[labels]) for labels, value in self.values.items()]


class LogMetrics:
    """Counts of log records, error codes and rule events, and the newest record's time: a
    Prometheus collector over plain dicts, fed by the journal thread."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        modules: Collection[str] = CANN_MODULES,
        codes: Collection[str] = CANN_CODES,
        max_label_sets: int = MAX_LABEL_SETS,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._modules = frozenset(modules)
        self._codes = frozenset(codes)
        self._lock = threading.Lock()
        self._records = _Counts(3, max_label_sets, wall)
        self._errors = _Counts(2, max_label_sets, wall)
        self._events = _Counts(3, max_label_sets, wall)
        self._newest_us: dict[str, int] = {}
        if registry is not None:
            registry.register(self)

    def observe(self, records: Sequence[Record], kind: str) -> None:
        """Count a batch of records of one log kind (`SourceInfo.kind`) that no block tallied."""
        if records:
            self.observe_tally(tally_of(records), kind)

    def observe_tally(self, tally: BlockTally, kind: str) -> None:
        """Count a committed block of one log kind (`SourceInfo.kind`); device readings and
        profiling operators are no logs, and are not counted."""
        if not tally.records or kind in TELEMETRY_KINDS:
            return
        newest = tally.newest_us
        kind = kind if kind in KINDS else OTHER
        with self._lock:
            for (level, module), count in tally.records.items():
                self._records.add((kind, self._level(level), self._module(module)), count)
            for (code, module), count in tally.codes.items():
                code = code if code in self._codes else OTHER
                self._errors.add((code, self._module(module)), count)
            if newest is not None:
                previous = self._newest_us.get(kind)
                if previous is None or newest > previous:
                    self._newest_us[kind] = newest

    def observe_events(self, events: Iterable[EventSummary]) -> None:
        """Count the rule events of a committed batch (the journal's `EventRow`s)."""
        counts = Counter((row.rule, row.severity, row.category) for row in events)
        if not counts:
            return
        with self._lock:
            for (rule, severity, category), count in counts.items():
                severity = severity if severity in _SEVERITIES else OTHER
                self._events.add((rule, severity, category or NONE), count)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            records = self._records.samples()
            errors = self._errors.samples()
            events = self._events.samples()
            newest = list(self._newest_us.items())
        return _families(records, errors, events, newest)

    def describe(self) -> Iterator[Metric]:
        """The metric names, without samples (so that a registry can refuse duplicates)."""
        return _families([], [], [], [])

    def _level(self, level: str | None) -> str:
        if level is None:
            return NONE
        return level if level in LEVELS else OTHER

    def _module(self, module: str | None) -> str:
        if module is None:
            return NONE
        return module if module in self._modules else OTHER


_Samples = list[tuple[tuple[str, ...], float, float]]


def _families(
    records: _Samples, errors: _Samples, events: _Samples, newest: list[tuple[str, int]]
) -> Iterator[Metric]:
    family = CounterMetricFamily(
        "ascend_log_records",
        "CANN log records journaled, by log kind, level and module (other: outside the known "
        "values; none: the record has no level or module).",
        labels=("kind", "level", "module"),
    )
    for labels, value, created in records:
        family.add_metric(labels, value, created=created)
    yield family
    family = CounterMetricFamily(
        "ascend_log_errors",
        "Records carrying a CANN error code, by code and module; a record with several codes "
        "counts once for each. Codes outside the known catalogue count as other.",
        labels=("code", "module"),
    )
    for labels, value, created in errors:
        family.add_metric(labels, value, created=created)
    yield family
    family = CounterMetricFamily(
        "ascend_rule_events",
        "Rule events journaled, by rule id, severity and category.",
        labels=("rule", "severity", "category"),
    )
    for labels, value, created in events:
        family.add_metric(labels, value, created=created)
    yield family
    gauge = GaugeMetricFamily(
        "ascend_log_last_record_timestamp_seconds",
        "The time written in the newest record journaled, by log kind (Unix time).",
        labels=("kind",),
    )
    for kind, timestamp_us in newest:
        gauge.add_metric((kind,), timestamp_us / 1e6)
    yield gauge
