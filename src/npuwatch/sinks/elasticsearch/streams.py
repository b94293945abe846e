"""Data stream names, by Elastic's convention `<type>-<dataset>-<namespace>`."""

from __future__ import annotations

import re

DEVICE_KINDS = frozenset(
    {"device", "device-os", "device-app", "firmware", "event", "slogd", "npu-smi"}
)
"""Logs written by or for the NPU side, and npu-smi's readings of the devices; everything else
(plog, training and console logs) is host-side and goes to the plog stream, except operators of
profiling runs, which have a stream of their own."""

_NAMESPACE = re.compile(r"^[a-z0-9_]{1,100}$")


def check_namespace(namespace: str) -> str:
    """The namespace, or ValueError: Elastic allows lower case letters, digits and `_`."""
    if not _NAMESPACE.match(namespace):
        raise ValueError(
            f"namespace {namespace!r} must be lower case letters, digits or _ (at most 100)"
        )
    return namespace


def dataset_of(kind: str | None) -> str:
    if kind == "profiling":
        return "ascend.profiling"
    return "ascend.device" if kind in DEVICE_KINDS else "ascend.plog"


def record_stream(kind: str | None, namespace: str) -> str:
    return f"logs-{dataset_of(kind)}-{namespace}"


def events_stream(namespace: str) -> str:
    return f"logs-ascend.events-{namespace}"


def all_streams(namespace: str) -> list[str]:
    return [
        f"logs-ascend.plog-{namespace}",
        f"logs-ascend.device-{namespace}",
        f"logs-ascend.profiling-{namespace}",
        events_stream(namespace),
    ]
