"""The record schema: ECS names, JSON Schema, validation at the boundary."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from npuwatch.record_schema import LogRecord, json_schema
from npuwatch.records import Flag, Record, format_timestamp
from tests.conftest import parse_one


def test_documents_use_nested_ecs_names() -> None:
    record = parse_one(
        "[ERROR] GE(370,python3):2025-03-11-08:12:40.117.305 [ge.cc:254]1432 Report:"
        "error_code:E19999, then EZ9999",
        path="/root/ascend/log/debug/plog/plog-370_20250311081200000.log",
    )
    doc = record.to_document()
    assert doc["@timestamp"] == "2025-03-11T08:12:40.117305Z"
    assert doc["log"]["level"] == "ERROR" and doc["log"]["logger"] == "GE"
    assert doc["log"]["origin"] == {"function": "Report", "file": {"name": "ge.cc", "line": 254}}
    assert doc["process"] == {"pid": 370, "name": "python3", "thread": {"id": 1432}}
    assert doc["error"] == {"code": "E19999"}
    assert doc["ascend"]["error_codes"] == ["E19999", "EZ9999"]
    assert doc["ascend"]["kind"] == "plog" and doc["ascend"]["channel"] == "debug"
    assert doc["ascend"]["file"] == {"pid": 370, "created": "2025-03-11T08:12:00.000000Z"}
    assert doc["event"]["original"] == record.original


def test_json_schema_lists_the_ecs_fields() -> None:
    schema = json_schema()
    assert {"@timestamp", "message", "log", "process", "error", "event", "host", "ascend"} <= set(
        schema["properties"]
    )
    assert "flags" in schema["$defs"]["Ascend"]["properties"]


def test_the_schema_rejects_what_a_parser_never_writes() -> None:
    document = parse_one("[INFO] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:x").to_document()
    LogRecord.model_validate(document)
    with pytest.raises(ValidationError):
        LogRecord.model_validate({**document, "error": {"code": "not-a-code"}})
    with pytest.raises(ValidationError):
        LogRecord.model_validate({**document, "surprise": 1})


def test_flag_names() -> None:
    assert Flag.names(Flag.TRUNCATED | Flag.PRE_CLOCK_SYNC) == ["truncated", "pre_clock_sync"]


def test_timestamps_print_as_utc_with_microseconds() -> None:
    assert format_timestamp(0) == "1970-01-01T00:00:00.000000Z"


def test_a_record_without_a_body_has_empty_body_fields() -> None:
    record = Record("text", "unparsed")
    assert (record.message, record.function, record.tags) == ("", None, None)
    with pytest.raises(AttributeError):
        record.no_such_field  # noqa: B018


def test_a_time_past_the_year_9999_makes_a_document_without_a_time_not_an_error() -> None:
    record = Record("a line", "slog")
    record.timestamp_us = 2**62  # only a damaged journal holds such a time
    document = record.to_document()
    assert "@timestamp" not in document
    assert document["event"]["original"] == "a line"


def test_a_records_text_is_the_same_before_and_after_its_message_is_read() -> None:
    """The collective watch reads `text` after the rules have read `message`: the line's tags
    (`[Get][Connection]`) must still be there, continuation lines included."""
    line = (
        "[ERROR] HCCL(51,python):2025-09-04-01:20:11.205.229 [topoinfo_exchange_server.cc:115] "
        "[57044][Get][Connection] tag[10.0.0.1%eth0_60000_0_1]"
    )
    untouched, touched = parse_one(line), parse_one(line)
    assert touched.message.startswith("tag[")  # the body is split into its fields
    assert touched.text == untouched.text
    assert "[Get][Connection] tag[" in touched.text
