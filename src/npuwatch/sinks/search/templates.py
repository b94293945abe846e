"""The index templates, ingest pipeline and lifecycle policy that `npuwatch es setup` installs.

The mappings are generated from the record schema (record_schema.LogRecord), so that a field
added to the schema is mapped the day it is shipped: codes, levels, modules, hosts and every
other string are keywords; `message` is text; `event.original` is kept in `_source` but neither
indexed nor aggregatable (ECS does the same: the parsed fields are what is searched); times are
dates.
Anything a document brings that the schema does not name is mapped as a keyword too.

Three templates a namespace: the log data streams (`logs-ascend.*-<ns>`); the events stream
(`logs-ascend.events-<ns>`), the same but for the ingest pipeline that stamps `event.ingested`
(the correlator reads new events by it, docs/adr/0003-live-incidents.md); and the plain indices
of the topology and incidents (documents replaced by id), with the same pipeline.
"""

from __future__ import annotations

from typing import Any

from npuwatch.setting_values import check_namespace
from npuwatch.sinks.search.engine import Flavour
from npuwatch.sinks.search.engines import engine_class
from npuwatch.sinks.search.streams import (
    INGESTED_PIPELINE,
    STATE_INDICES,
    TEMPLATE_PRIORITY,
    events_stream,
    state_index,
)

_TEXT_FIELDS = frozenset({"message"})
_STORED_ONLY = frozenset({"event.original"})
_SCALARS = {
    "integer": {"type": "long"},
    "number": {"type": "double"},
    "boolean": {"type": "boolean"},
}


def mappings() -> dict[str, Any]:
    from npuwatch.record_schema import LogRecord  # noqa: PLC0415 - pydantic, only for setup

    schema = LogRecord.model_json_schema(by_alias=True)
    properties = _properties(schema, schema.get("$defs", {}), "")
    # keyword, not Elasticsearch's constant_keyword: OpenSearch requires its value up front.
    properties["data_stream"] = {
        "properties": {name: _keyword() for name in ("type", "dataset", "namespace")}
    }
    return {
        "dynamic_templates": [
            {"strings_as_keywords": {"match_mapping_type": "string", "mapping": _keyword()}}
        ],
        "properties": properties,
    }


def index_template(
    namespace: str, flavour: Flavour, shards: int = 1, replicas: int = 1
) -> dict[str, Any]:
    """A composable template for the data streams of `namespace` (logs-ascend.*-<namespace>)."""
    check_namespace(namespace)
    settings: dict[str, Any] = {"number_of_shards": shards, "number_of_replicas": replicas}
    settings.update(engine_class(flavour).template_settings(namespace))
    return {
        "index_patterns": [f"logs-ascend.*-{namespace}"],
        "data_stream": {},
        "priority": TEMPLATE_PRIORITY,
        "template": {"settings": settings, "mappings": mappings()},
        "_meta": {"managed_by": "npuwatch", "description": "Ascend NPU logs and rule events"},
    }


def events_template(namespace: str, flavour: Flavour, replicas: int = 1) -> dict[str, Any]:
    """The events data stream's template: the logs' template, and the ingest time stamped."""
    template = index_template(namespace, flavour, replicas=replicas)
    template["index_patterns"] = [events_stream(namespace)]
    template["priority"] = TEMPLATE_PRIORITY + 5
    template["template"]["settings"]["index.default_pipeline"] = INGESTED_PIPELINE
    template["template"]["mappings"]["properties"].setdefault("event", {"properties": {}})
    template["template"]["mappings"]["properties"]["event"]["properties"]["ingested"] = {
        "type": "date"
    }
    return template


def state_template(namespace: str, replicas: int = 1) -> dict[str, Any]:
    """The plain indices of documents replaced by id (topology, heartbeats, incidents)."""
    check_namespace(namespace)
    return {
        "index_patterns": [state_index(name, namespace) for name in STATE_INDICES],
        "priority": TEMPLATE_PRIORITY + 10,
        "template": {
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": replicas,
                "index.default_pipeline": INGESTED_PIPELINE,
            },
            "mappings": {
                "dynamic_templates": [
                    {"strings_as_keywords": {"match_mapping_type": "string", "mapping": _keyword()}}
                ],
                "properties": {
                    "@timestamp": {"type": "date"},
                    "event": {"properties": {"ingested": {"type": "date"}}},
                    # What the correlator reads back whole and never searches: stored, not
                    # indexed (their values mix numbers and text, and a job has thousands).
                    "ascend": {
                        "properties": {
                            "topology": {"properties": {"facts": _stored_only_object()}},
                            "heartbeat": {"properties": {"processes": _stored_only_object()}},
                            "incident": {
                                "properties": {
                                    name: _stored_only_object()
                                    for name in ("victims", "unheard", "evidence", "revisions")
                                }
                            },
                        }
                    },
                },
            },
        },
        "_meta": {"managed_by": "npuwatch", "description": "Ascend topology and incidents"},
    }


def ingested_pipeline() -> dict[str, Any]:
    """Stamps every document with the time the engine took it in (`event.ingested`)."""
    return {
        "description": "npuwatch: the time the document was indexed, for incremental reads",
        "processors": [{"set": {"field": "event.ingested", "value": "{{{_ingest.timestamp}}}"}}],
    }


def lifecycle_policy(flavour: Flavour, delete_after_days: int, namespace: str) -> dict[str, Any]:
    """Delete the data after `delete_after_days` (rolling over daily or at 50 GB before)."""
    return engine_class(flavour).lifecycle_policy_body(delete_after_days, namespace)


def _stored_only_object() -> dict[str, Any]:
    return {"type": "object", "enabled": False}


def _keyword() -> dict[str, Any]:
    return {"type": "keyword", "ignore_above": 1024}


def _properties(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, field in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        mapping = _mapping(field, defs, path)
        if mapping is not None:
            result[name] = mapping
    return result


def _mapping(field: dict[str, Any], defs: dict[str, Any], path: str) -> dict[str, Any] | None:
    field = _resolve(field, defs)
    if path in _STORED_ONLY:
        return {"type": "keyword", "index": False, "doc_values": False}
    if path in _TEXT_FIELDS:
        return {"type": "text"}
    kind = field.get("type")
    if kind == "object" or "properties" in field:
        nested = _properties(field, defs, f"{path}.")
        return {"properties": nested} if nested else {"type": "object"}
    if kind == "array":
        return _mapping(field.get("items", {}), defs, path)
    if kind == "string":
        return {"type": "date"} if field.get("format") == "date-time" else _keyword()
    if kind in _SCALARS:
        return dict(_SCALARS[kind])
    return None  # free-form (a dict of extracted fields): the dynamic template maps it


def _resolve(field: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow `$ref` and take the non-null side of `anyOf [X, null]`."""
    while True:
        if "$ref" in field:
            field = defs[field["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in field:
            options = [option for option in field["anyOf"] if option.get("type") != "null"]
            if len(options) != 1:
                return {"type": "string"} if options else {}
            field = options[0]
        else:
            return field
