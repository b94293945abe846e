"""Configuration read from its two sources, a TOML file and NPUWATCH_* variables, and validated.

A variable `NPUWATCH_<SECTION>__<KEY>` (double underscores between levels, any case) sets one
key and wins over the file; its value is read as a TOML value when it is one (`true`, `10`,
`["/data/log"]`) and as a string otherwise (`7d`). Every problem is reported against the source
it came from, so that an operator edits the right thing.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from npuwatch.problems import Problems
from npuwatch.quantities import (
    QuantityOutOfRange,
    format_bytes,
    format_duration,
    parse_byte_size,
    parse_duration,
)
from npuwatch.untrusted_files import read_trusted_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ENVIRONMENT_PREFIX = "NPUWATCH_"
LEVEL_SEPARATOR = "__"

Model = TypeVar("Model", bound=BaseModel)
Location = tuple[str | int, ...]

_TOML_POSITION = re.compile(r"^(?P<reason>.*) \(at line (?P<line>\d+), column (?P<column>\d+)\)$")
_TOML_AT_END = re.compile(r"^(?P<reason>.*) \(at end of document\)$")


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the configuration, printed as one line that says where and why."""

    source: str
    """The file's path, or `environment NPUWATCH_...` for a variable."""
    reason: str
    key: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.source}:{self.line}:{self.column}: {self.reason}"
        if self.key is not None:
            return f"{self.source}: {self.key}: {self.reason}"
        return f"{self.source}: {self.reason}"


class ConfigError(Problems):
    """The configuration is not valid; `problems` lists every reason, one line each."""

    problems: Sequence[ConfigProblem]

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        super().__init__(problems)


class ConfigUnreadable(ConfigError):
    """The configuration file is missing or cannot be read, as opposed to being wrong."""


@dataclass(frozen=True)
class _Override:
    variable: str
    value: object


def load_model(model: type[Model], path: Path | None, environ: Mapping[str, str]) -> Model:
    """The model validated from the TOML file at `path` (none: only defaults) with the
    environment's NPUWATCH_* overrides laid over it; raises ConfigError listing every problem."""
    label = str(path) if path is not None else "defaults"
    data = _read_toml(path) if path is not None else {}
    overrides, problems = _environment_overrides(environ)
    merged = copy.deepcopy(data)
    for keys, override in overrides.items():
        problem = _apply(merged, keys, override)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise ConfigError(problems)
    try:
        return model.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(
            [_describe(model, detail, label, data, overrides) for detail in error.errors()]
        ) from None


_OPERATORS_OWN = (Path("/dev/stdin"), Path(os.devnull))


def _read_toml(path: Path) -> dict[str, Any]:
    label = str(path)
    try:
        # Standard input (`config check -`) is what the operator piped in, /dev/null their way
        # to give no settings at all: theirs to trust, though neither is a regular file.
        raw = path.read_bytes() if path in _OPERATORS_OWN else read_trusted_file(path)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigUnreadable([ConfigProblem(label, "no such file")]) from None
    except OSError as error:
        reason = f"cannot read: {error.strerror or error}"
        raise ConfigUnreadable([ConfigProblem(label, reason)]) from None
    except UnicodeDecodeError as error:
        reason = f"not UTF-8 text ({error.reason} at byte {error.start})"
        raise ConfigError([ConfigProblem(label, reason)]) from None
    try:
        # Annotated because tomli, on Python 3.10, may be installed without type information.
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError([_syntax_problem(label, text, str(error))]) from None
    except RecursionError:  # tomllib recurses once per nested array or table
        reason = "arrays or tables nested too deep to be read"
        raise ConfigError([ConfigProblem(label, reason)]) from None
    return data


def _syntax_problem(label: str, text: str, message: str) -> ConfigProblem:
    # tomllib puts the position at the end of its message; editors want it in front.
    position = _TOML_POSITION.match(message)
    if position:
        line, column = int(position["line"]), int(position["column"])
        reason = position["reason"]
    elif at_end := _TOML_AT_END.match(message):
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
        reason = at_end["reason"]
    else:
        return ConfigProblem(label, f"invalid TOML: {message}")
    reason = reason[:1].lower() + reason[1:]
    return ConfigProblem(label, f"invalid TOML: {reason}", line=line, column=column)


def _environment_overrides(
    environ: Mapping[str, str],
) -> tuple[dict[tuple[str, ...], _Override], list[ConfigProblem]]:
    overrides: dict[tuple[str, ...], _Override] = {}
    problems: list[ConfigProblem] = []
    for variable in sorted(environ):
        rest = variable[len(ENVIRONMENT_PREFIX) :]
        # NPUWATCH_CONFIG (the file's path) and other single-level names are not settings.
        if not variable.upper().startswith(ENVIRONMENT_PREFIX) or LEVEL_SEPARATOR not in rest:
            continue
        keys = tuple(rest.lower().split(LEVEL_SEPARATOR))
        if not all(keys):
            problems.append(
                ConfigProblem(
                    f"environment {variable}",
                    "not a setting name: write NPUWATCH_<SECTION>__<KEY> with two "
                    "underscores between levels, such as NPUWATCH_JOURNAL__MAX_AGE",
                )
            )
            continue
        overrides[keys] = _Override(variable, _environment_value(environ[variable]))
    return overrides, problems


def _environment_value(text: str) -> object:
    """A TOML value when the text is one (`true`, `10`, `["a"]`, `"x"`), else the text."""
    try:
        parsed = tomllib.loads(f"v = {text}")
    except (tomllib.TOMLDecodeError, RecursionError):
        return text
    # A value with a newline could define more keys than `v`; that is text, not a value.
    return parsed["v"] if parsed.keys() == {"v"} else text


def _apply(
    data: dict[str, Any], keys: tuple[str, ...], override: _Override
) -> ConfigProblem | None:
    node = data
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            return ConfigProblem(
                f"environment {override.variable}",
                f"{_dotted(keys[: depth + 1])} is a value in the file, not a table",
                key=_dotted(keys),
            )
        node = child
    node[keys[-1]] = override.value
    return None


def _describe(
    model: type[BaseModel],
    detail: ErrorDetails,
    label: str,
    data: Mapping[str, Any],
    overrides: Mapping[tuple[str, ...], _Override],
) -> ConfigProblem:
    location = detail["loc"]
    variable = _variable_for(location, data, overrides)
    source = f"environment {variable}" if variable else label
    kind = detail["type"]
    got = detail.get("input")
    if kind == "extra_forbidden":
        known = _known_keys(model, location[:-1])
        reason = f"unknown key (known keys: {', '.join(known)})" if known else "unknown key"
    elif kind == "model_type":
        reason = f"expected a table of keys, got {got!r}"
    elif kind == "path_type":
        reason = f"expected a path as a string, got {got!r}"
    elif kind in _BOUND_KINDS or isinstance(detail.get("ctx", {}).get("error"), QuantityOutOfRange):
        # What was written (`1000d`), not what it was read as (86400000.0).
        written = _written(data, location, got)
        reason = _out_of_range(model, location, written)
    elif kind == "value_error":
        # Our validators write the whole reason, including what they were given.
        reason = str(detail.get("ctx", {}).get("error", detail["msg"]))
    else:
        reason = f"{detail['msg'][:1].lower()}{detail['msg'][1:]}, got {got!r}"
        if variable and kind == "string_type":
            reason += f" (to pass text that reads as a TOML value, quote it: {variable}='\"...\"')"
    return ConfigProblem(source, reason, key=_dotted(location))


_BOUND_KINDS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}
)


def _written(data: Any, location: Location, parsed: object) -> object:
    """The value at `location` as the file or variable gave it, or `parsed` when it is not there."""
    if not _present(data, location):
        return parsed
    for key in location:
        data = data[key]
    return data


def _out_of_range(model: type[BaseModel], location: Location, got: object) -> str:
    """`expected a duration above 0s and at most 10m, got 1e12`: both ends of the range, in the
    key's own units, whichever end the value missed."""
    field = _field_at(model, location)
    if field is None:  # not a field of a model (an item of a list): pydantic's own words
        return f"out of range, got {got!r}"
    parser = next((m.func for m in field.metadata if isinstance(m, BeforeValidator)), None)
    what, shown = "a number", cast(Callable[[Any], str], repr)
    if parser is parse_duration:
        what, shown = "a duration", format_duration
    elif parser is parse_byte_size:
        what, shown = "a size", format_bytes
    ends = []
    for marker in field.metadata:
        for name, words in (
            ("gt", "above"),
            ("ge", "at least"),
            ("lt", "below"),
            ("le", "at most"),
        ):
            bound = getattr(marker, name, None)
            if bound is not None:
                ends.append(f"{words} {shown(bound)}")
    if not ends:  # a quantity without bounds of its own: the one all quantities have
        ends = ["of at most 100 years" if what == "a duration" else "of at most 1PiB"]
    text = repr(got)
    text = text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"
    return f"expected {what} {' and '.join(ends)}, got {text}"


def _field_at(model: type[BaseModel], location: Location) -> FieldInfo | None:
    """The field of `model` (or of its nested sections) at `location`."""
    field = None
    for key in location:
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None:
            return None
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return field


def _variable_for(
    location: Location, data: Mapping[str, Any], overrides: Mapping[tuple[str, ...], _Override]
) -> str | None:
    """The variable that set the value at `location`, or None when it came from the file."""
    for keys, override in overrides.items():
        if location[: len(keys)] == keys:
            return override.variable
    # A variable that made up a section or table, such as NPUWATCH_SOURCEZ__ROOTS.
    if not _present(data, location):
        for keys, override in overrides.items():
            if keys[: len(location)] == location:
                return override.variable
    return None


def _present(data: Any, location: Location) -> bool:
    for key in location:
        in_table = isinstance(data, dict) and isinstance(key, str) and key in data
        in_array = isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data)
        if not (in_table or in_array):
            return False
        data = data[key]
    return True


def _known_keys(model: type[BaseModel], location: Location) -> list[str]:
    for key in location:
        field = model.model_fields.get(key) if isinstance(key, str) else None
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _dotted(location: Sequence[str | int]) -> str:
    text = ""
    for key in location:
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else key
    return text
