"""The names npuwatch gives in the search engine: data streams, by Elastic's convention
`<type>-<dataset>-<namespace>`, and the index template and lifecycle policy of a namespace."""

from __future__ import annotations

NAME_PREFIX = "npuwatch-logs-ascend"
TEMPLATE_PRIORITY = 250
"""Above the built-in `logs-*-*` template of Elasticsearch (priority 100)."""

DEVICE_KINDS = frozenset(
    {"device", "device-os", "device-app", "firmware", "event", "slogd", "npu-smi"}
)
"""Logs written by or for the NPU side, and npu-smi's readings of the devices; everything else
(plog, training and console logs) is host-side and goes to the plog stream, except operators of
profiling runs and findings of the debugging tools, which have a stream each."""

OWN_STREAMS = {"profiling": "ascend.profiling", "debug": "ascend.debug"}
"""Telemetry kinds with a data stream of their own: profiling operators, and the debugging
tools' findings (msprobe, msSanitizer, msaicerr)."""


def dataset_of(kind: str | None) -> str:
    if kind in OWN_STREAMS:
        return OWN_STREAMS[kind]
    return "ascend.device" if kind in DEVICE_KINDS else "ascend.plog"


def record_stream(kind: str | None, namespace: str) -> str:
    return f"logs-{dataset_of(kind)}-{namespace}"


def events_stream(namespace: str) -> str:
    return f"logs-ascend.events-{namespace}"


STATE_INDICES = ("topology", "incidents")
"""Plain indices (documents replaced by id, not appended): the agents' topology facts and
heartbeats, and the correlator's incidents."""


def state_index(name: str, namespace: str) -> str:
    """`logs-ascend.topology-<namespace>`: a plain index of documents replaced by id."""
    return f"logs-ascend.{name}-{namespace}"


def all_streams(namespace: str) -> list[str]:
    return [
        f"logs-ascend.plog-{namespace}",
        f"logs-ascend.device-{namespace}",
        f"logs-ascend.profiling-{namespace}",
        f"logs-ascend.debug-{namespace}",
        events_stream(namespace),
    ]


INGESTED_PIPELINE = "npuwatch-ingested"
"""The ingest pipeline that stamps `event.ingested` (docs/adr/0003-live-incidents.md)."""


def template_name(namespace: str) -> str:
    """The index template of one namespace's data streams."""
    return f"{NAME_PREFIX}-{namespace}"


def events_template_name(namespace: str) -> str:
    return f"{NAME_PREFIX}-events-{namespace}"


def state_template_name(namespace: str) -> str:
    return f"{NAME_PREFIX}-state-{namespace}"


def policy_name(namespace: str) -> str:
    """One lifecycle policy per namespace, as one template: clusters sharing an engine may keep
    their data for different times, and OpenSearch's policy names its indices itself."""
    return f"{NAME_PREFIX}-{namespace}"
