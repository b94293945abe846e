"""Configuration files as an operator (or a typo) writes them: the complete example with keys
given the wrong type, non-finite, negative or enormous numbers and durations, hostile strings,
unknown keys and sections; and TOML text that does not parse."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from typing import Any

import tomllib
from hypothesis import strategies as st

from npuwatch.config import example_config

FIFO = "{fifo}"
"""Stands for a FIFO made for the example (a path setting that blocks whoever opens it)."""

HOSTILE_VALUES: tuple[Any, ...] = (
    math.inf,
    -math.inf,
    math.nan,
    1e12,
    1e308,
    -1,
    0,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    0.000001,
    True,
    "",
    "inf",
    "nan",
    "1e12s",
    "-5s",
    "0s",
    "99999999999999999999d",
    "1e400",
    "9999999999999999TiB",
    "1.5",
    "7d",
    "\x00",
    "\x1b]52;c;ZXZpbA==\x07",
    "/nonexistent/file",
    "/dev/null",
    FIFO,
    [],
    ["/dev/null"],
    {"nested": 1},
)
UNKNOWN_KEYS = ("unknown", "Drain_Timeout", "max_line_bytes ", "enabled.x", "ü")


@functools.cache
def example() -> dict[str, Any]:
    """The complete example configuration (every key at its default)."""
    return tomllib.loads(example_config())


def key_paths(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from key_paths(value, (*prefix, key))
        else:
            yield (*prefix, key)


@functools.cache
def every_key() -> tuple[tuple[str, ...], ...]:
    return tuple(key_paths(example()))


def with_value(table: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(table))  # a deep copy of plain TOML data
    place = copy
    for key in path[:-1]:
        child = place.get(key)
        if not isinstance(child, dict):
            child = place[key] = {}
        place = child
    place[path[-1]] = value
    return copy


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are TOML's basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def toml_text(table: dict[str, Any]) -> str:
    """TOML for nested tables of plain values (what this module generates)."""
    lines: list[str] = []

    def emit(values: dict[str, Any], name: tuple[str, ...]) -> None:
        tables = {k: v for k, v in values.items() if isinstance(v, dict) and _is_table(v)}
        if name:
            lines.append("[" + ".".join(json.dumps(part) for part in name) + "]")
        for key, value in values.items():
            if key not in tables:
                lines.append(f"{json.dumps(key)} = {toml_value(value)}")
        for key, value in tables.items():
            emit(value, (*name, key))

    emit(table, ())
    return "\n".join(lines) + "\n"


def _is_table(value: dict[str, Any]) -> bool:
    return value != {"nested": 1}  # the one inline table among the hostile values


@st.composite
def config_table(draw: st.DrawFn, changes: int = 4) -> dict[str, Any]:
    """The example with up to `changes` keys set to hostile values, or unknown keys added."""
    table = example()
    for _ in range(draw(st.integers(1, changes))):
        path = draw(st.sampled_from(every_key()))
        if draw(st.integers(0, 9)) == 0:
            path = (*path[:-1], draw(st.sampled_from(UNKNOWN_KEYS)))
        table = with_value(table, path, draw(st.sampled_from(HOSTILE_VALUES)))
    return table


def config_text() -> st.SearchStrategy[str]:
    """A configuration file's text: mostly valid TOML, sometimes torn."""
    valid = config_table().map(toml_text)
    torn = st.builds(
        lambda text, at, junk: text[:at] + junk + text[at:],
        valid,
        st.integers(0, 4000),
        st.sampled_from(["[", "]]", "=", '"', "\x00", "\n[agent]\n", "key = = 1", "\ud7ff"]),
    )
    return valid | torn
