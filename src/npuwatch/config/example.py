"""A configuration model written out as a commented TOML file of its defaults.

Each key is preceded by its field's description, and each table by its model's docstring, so the
example file cannot drift from the models: it is generated from them.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo

from npuwatch.quantities import format_bytes, format_duration, parse_byte_size, parse_duration

_WIDTH = 100


def commented_toml(model: type[BaseModel], header: Sequence[str]) -> str:
    """The TOML text of every table and key of `model` at its default, each explained; `header`
    lines open the file as comments."""
    lines = [f"# {line}".rstrip() for line in header]
    _write_table(lines, model, ())
    return "\n".join(lines) + "\n"


def _write_table(lines: list[str], model: type[BaseModel], path: tuple[str, ...]) -> None:
    tables: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            # TOML gives every key after a [table] header to that table, so sub-tables go last.
            tables.append((name, annotation))
            continue
        if lines and not lines[-1].startswith("["):
            lines.append("")
        lines.extend(_comment(field.description or name))
        default = field.get_default(call_default_factory=True)
        if default is None:
            example = field.examples[0] if field.examples else ""
            lines.append(f"# {name} = {field_value(example, field)}")
        else:
            lines.append(f"{name} = {field_value(default, field)}")
    for name, table in tables:
        lines.append("")
        lines.extend(_comment(_first_line(table.__doc__ or "")))
        lines.append(f"[{'.'.join((*path, name))}]")
        _write_table(lines, table, (*path, name))


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=_WIDTH, initial_indent="# ", subsequent_indent="# ")


def _first_line(docstring: str) -> str:
    return docstring.strip().split("\n", 1)[0]


def field_value(value: object, field: FieldInfo) -> str:
    """`value` of `field` as TOML, a duration or size in its unit ("10s", "64MiB")."""
    parser = _unit_parser(field)
    if parser is parse_duration and isinstance(value, (int, float)):
        return _toml(format_duration(value))
    if parser is parse_byte_size and isinstance(value, int):
        return _toml(format_bytes(value))
    return _toml(value)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        # A JSON string is a valid TOML basic string: the same quotes and escapes.
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r} of {type(value).__name__}")


def _unit_parser(field: FieldInfo) -> object:
    """The unit-aware parser of a Duration or ByteSize field, so its default is written "10s"."""
    for marker in field.metadata:
        if isinstance(marker, BeforeValidator):
            return marker.func
    return None
