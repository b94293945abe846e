"""The record fields a rule condition may name, by their ECS names, and how to read each one.

A field is read as a single value or, for fields that hold several (`error.code` holds every
code of the record), as a tuple; a comparison on such a field is true when any value satisfies it.
`fields.<name>` reads a value extracted by the rule's own `extract` patterns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from npuwatch.records import Flag, Record

Getter = Callable[[Record], Any]


@dataclass(frozen=True)
class FieldSpec:
    getter: Getter
    kind: str
    """"str", "int", "strs" (several strings), "ints" (several numbers)."""


def _source_attribute(name: str) -> Getter:
    def get(record: Record) -> Any:
        source = record.source
        return None if source is None else getattr(source, name)

    return get


def _device(record: Record) -> int | None:
    if record.device is not None:
        return record.device
    source = record.source
    return None if source is None else source.device


FIELDS: dict[str, FieldSpec] = {
    "message": FieldSpec(attrgetter("message"), "str"),
    "event.original": FieldSpec(attrgetter("original"), "str"),
    "log.level": FieldSpec(attrgetter("level"), "str"),
    "log.logger": FieldSpec(attrgetter("logger"), "str"),
    "log.file.path": FieldSpec(_source_attribute("path"), "str"),
    "log.origin.file.name": FieldSpec(attrgetter("origin_file"), "str"),
    "log.origin.file.line": FieldSpec(attrgetter("origin_line"), "int"),
    "log.origin.function": FieldSpec(attrgetter("function"), "str"),
    "process.pid": FieldSpec(attrgetter("pid"), "int"),
    "process.name": FieldSpec(attrgetter("process_name"), "str"),
    "process.thread.id": FieldSpec(attrgetter("thread_id"), "int"),
    "host.name": FieldSpec(_source_attribute("host"), "str"),
    "error.code": FieldSpec(attrgetter("error_codes"), "strs"),
    "ascend.error_codes": FieldSpec(attrgetter("error_codes"), "strs"),
    "ascend.runtime_codes": FieldSpec(attrgetter("runtime_codes"), "ints"),
    "ascend.framework_code": FieldSpec(attrgetter("framework_code"), "str"),
    "ascend.kind": FieldSpec(_source_attribute("kind"), "str"),
    "ascend.channel": FieldSpec(_source_attribute("channel"), "str"),
    "ascend.device": FieldSpec(_device, "int"),
    "ascend.rank": FieldSpec(attrgetter("rank"), "int"),
    "ascend.tags": FieldSpec(lambda r: r.tags or (), "strs"),
    # The text after the header, with continuation lines; it holds the message, so a test that
    # fails on it fails on the message too, without deriving the body fields.
    "ascend.text": FieldSpec(attrgetter("text"), "str"),
    "ascend.lowered_text": FieldSpec(attrgetter("lowered_text"), "str"),
    "ascend.submodule": FieldSpec(attrgetter("submodule"), "str"),
    "ascend.format": FieldSpec(attrgetter("format"), "str"),
    "ascend.flags": FieldSpec(lambda r: tuple(Flag.names(r.flags)), "strs"),
    "ascend.lines": FieldSpec(attrgetter("line_count"), "int"),
}
ALIASES = {
    "ascend.runtime_code": "ascend.runtime_codes",
    "ascend.error_code": "ascend.error_codes",
    "level": "log.level",
    "module": "log.logger",
}
EXTRACTED_PREFIX = "fields."


def resolve_field(name: str) -> str | None:
    """The canonical name of a field, or None when there is no such field."""
    name = ALIASES.get(name, name)
    if name in FIELDS or (name.startswith(EXTRACTED_PREFIX) and len(name) > len(EXTRACTED_PREFIX)):
        return name
    return None


def close_matches(name: str) -> list[str]:
    import difflib  # noqa: PLC0415 - only on the error path

    return difflib.get_close_matches(name, [*FIELDS, *ALIASES], n=3)
