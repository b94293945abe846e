"""orjson for the bodies the search-engine clients send, through each client's serializer hook.

The bulk helpers of both clients serialise every action line and every document with the
client's JSON serializer; with the standard library that was a third of the CPU of shipping a
record (bench/anchors.py: 35 of 104 µs a document, orjson 2.5 µs for the same documents). The
documents hold only strings, numbers, booleans, lists and dicts, so orjson's output is the same
JSON (it writes NaN as null where `json` would write an invalid `NaN`). Without orjson the clients
keep their own serializers.
"""

from __future__ import annotations

from typing import Any


def opensearch_serializer() -> Any | None:
    """A JSON serializer for opensearch-py's `serializer=`, or None without orjson."""
    try:
        import orjson  # noqa: PLC0415 - imported when a sink connects
    except ImportError:
        return None
    from opensearchpy.exceptions import SerializationError  # noqa: PLC0415
    from opensearchpy.serializer import JSONSerializer  # noqa: PLC0415

    options = orjson.OPT_NON_STR_KEYS

    class OrjsonSerializer(JSONSerializer):
        def dumps(self, data: Any) -> Any:
            if isinstance(data, str):  # the client passes bodies it has already serialised
                return data
            try:
                # The bulk helper measures and joins str: orjson's bytes are decoded (UTF-8).
                return orjson.dumps(data, default=self.default, option=options).decode()
            except TypeError as error:
                raise SerializationError(data, error) from error

    return OrjsonSerializer()


def elasticsearch_serializer() -> Any | None:
    """elasticsearch-py's own orjson serializer, or None without orjson."""
    try:
        from elasticsearch.serializer import OrjsonSerializer  # noqa: PLC0415
    except ImportError:  # the client defines it only when orjson imports
        return None
    return OrjsonSerializer()
