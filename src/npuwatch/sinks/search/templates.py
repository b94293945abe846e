"""The index template and the lifecycle policy that `npuwatch es setup` installs.

The mappings are generated from the record schema (records.LogRecord), so that a field added to
the schema is mapped the day it is shipped: codes, levels, modules, hosts and every other string
are keywords; `message` is text; `event.original` is kept in `_source` but neither indexed nor
aggregatable (ECS does the same: the parsed fields are what is searched); times are dates.
Anything a document brings that the schema does not name is mapped as a keyword too.
"""

from __future__ import annotations

from typing import Any

from npuwatch.setting_values import check_namespace
from npuwatch.sinks.search.engine import Flavour
from npuwatch.sinks.search.engines import engine_class
from npuwatch.sinks.search.streams import TEMPLATE_PRIORITY

_TEXT_FIELDS = frozenset({"message"})
_STORED_ONLY = frozenset({"event.original"})
_SCALARS = {
    "integer": {"type": "long"},
    "number": {"type": "double"},
    "boolean": {"type": "boolean"},
}


def mappings() -> dict[str, Any]:
    from npuwatch.records import LogRecord  # noqa: PLC0415 - pydantic, only for setup

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


def lifecycle_policy(flavour: Flavour, delete_after_days: int, namespace: str) -> dict[str, Any]:
    """Delete the data after `delete_after_days` (rolling over daily or at 50 GB before)."""
    return engine_class(flavour).lifecycle_policy_body(delete_after_days, namespace)


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
