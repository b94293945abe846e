"""Which metrics a PromQL expression asks for, and which the agent and the cluster correlator
export: so that an alert or a dashboard panel naming a metric npuwatch never writes fails a
test, not a 3 a.m. page that never comes."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry

from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.prometheus.debug_metrics import DebugMetrics
from npuwatch.sinks.prometheus.device_metrics import DeviceMetrics
from npuwatch.sinks.prometheus.log_metrics import LogMetrics
from npuwatch.sinks.prometheus.profiling_metrics import ProfilingMetrics

PROMETHEUS_OWN = frozenset({"up", "ALERTS"})
"""Series Prometheus itself makes: scrape health and the alerts of alerts.yml."""

_NOT_NAMES = frozenset(
    {
        "by", "on", "without", "ignoring", "group_left", "group_right", "offset", "bool",
        "and", "or", "unless", "inf", "nan",
        "sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk",
        "quantile", "count_values",
    }
)  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_LABEL_LIST = re.compile(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGE = re.compile(r"\[[^\]]*\]")
# An identifier that is not a function call, a variable ($x) or part of a number or a name.
_IDENTIFIER = re.compile(r"(?<![\w.:$])[a-zA-Z_:][a-zA-Z0-9_:]*+(?!\s*\()")


def metric_names(expr: str) -> set[str]:
    """The metric names in `expr`: strings, label matchers, label lists and ranges removed,
    then every identifier that is neither a function, an operator nor a keyword."""
    bare = _RANGE.sub("", _LABEL_LIST.sub(r"\1", _MATCHERS.sub("", _STRING.sub('""', expr))))
    return {name for name in _IDENTIFIER.findall(bare) if name not in _NOT_NAMES}


def exported_metric_names() -> set[str]:
    """Every series name the agent's or the correlator's /metrics can expose."""
    return agent_metric_names() | correlator_metric_names()


def agent_metric_names() -> set[str]:
    """Every series name the agent's registry can expose (counters with their `_total`)."""
    registry = CollectorRegistry()
    # As on a host whose npu-smi has been polled: its gauges are exported from then on.
    SelfMetrics(registry).npu_smi_polled(up=True, wall=0.0)
    LogMetrics(registry)
    DeviceMetrics(registry)
    ProfilingMetrics(registry)
    DebugMetrics(registry)
    return _series_names(registry)


def correlator_metric_names() -> set[str]:
    """Every series name `npuwatch correlate` can expose (its histogram's buckets, sum and
    count among them)."""
    return _series_names(CorrelatorMetrics().registry)


_SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count")}
"""A counter's `_created` sample says when its label set was first counted (prometheus_client
exposes it; alerts.yml tells a fresh first event from old totals by it)."""


def _series_names(registry: CollectorRegistry) -> set[str]:
    names = set()
    for family in registry.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ()))
    return names
