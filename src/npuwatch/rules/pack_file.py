"""Reading one rule pack file: YAML → the schema's validation → compiled rules, with every
problem reported as `file:line:column: what is wrong`.

The slow way in (PyYAML, pydantic and the condition grammar, about 0.15 s of a command's start):
rules/loader.py comes here only for packs the cache (rules/rule_cache.py) cannot answer for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from npuwatch.rules.compiler import CompileError
from npuwatch.rules.fields import FIELDS, close_matches, resolve_field
from npuwatch.rules.grammar import ConditionSyntaxError, parse_condition
from npuwatch.rules.model import Rule, RuleSpec
from npuwatch.rules.pack import Pack, Problem, build_rule
from npuwatch.rules.patterns import PatternError, compile_pattern
from npuwatch.rules.schema import PackSchema
from npuwatch.untrusted_files import read_trusted_file
from npuwatch.yaml_input import shape_problem

# libyaml's loader when PyYAML was built with it (ten times faster); both keep positions.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_pack(path: Path) -> tuple[Pack | None, list[Problem]]:
    """One pack file: the pack with the rules that compiled, and its problems (None and the
    problems when the file as a whole does not read or validate)."""
    name = str(path)
    try:
        # A pack decides what the agent reports: one another user could change is refused.
        text = read_trusted_file(path).decode("utf-8")
    except OSError as error:
        return None, [Problem(name, 1, 1, f"cannot read the file: {error.strerror or error}")]
    except UnicodeDecodeError as error:
        return None, [Problem(name, 1, 1, f"cannot read the file: {error}")]
    shape = shape_problem(text, _YAML_LOADER)
    if shape is not None:  # before the load: libyaml would overflow the stack on it
        return None, [Problem(name, shape.line, shape.column, f"not a rule pack: {shape.reason}")]
    try:
        loader = _YAML_LOADER(text)
        try:
            document = loader.get_single_node()
            data = loader.construct_document(document) if document is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        return None, [yaml_problem(name, text, error)]
    if not isinstance(data, dict):
        return None, [Problem(name, 1, 1, "a rule pack is a mapping with 'pack' and 'rules'")]
    try:
        pack = PackSchema.model_validate(data)
    except ValidationError as error:
        return None, [_validation_problem(name, document, item) for item in error.errors()]
    rules: list[Rule] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, schema in enumerate(pack.rules):
        spec = RuleSpec.from_data(schema.model_dump())
        node = _node_at(document, ("rules", index))
        if spec.id in seen:
            problems.append(
                _at(
                    name,
                    _node_at(document, ("rules", index, "id")),
                    f"rule id {spec.id!r} appears twice in this pack",
                )
            )
            continue
        seen.add(spec.id)
        line = node.start_mark.line + 1 if node is not None else 1
        rule, problem = compile_rule(
            spec, pack.pack, f"{name}:{line}", name, _node_at(document, ("rules", index)), text
        )
        if problem is not None:
            problems.append(problem)
        elif rule is not None:
            rules.append(rule)
    return Pack(pack.pack, pack.disable, tuple(rules)), problems


def yaml_problem(path: str, text: str, error: yaml.YAMLError) -> Problem:
    """A YAML error in one line at its place: PyYAML's own text puts its mark (`in "<unicode
    string>", line 3, column 5`) on lines of their own."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    context = getattr(error, "context", None)
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        what = f"character #x{error.character:04x} is not allowed in YAML: {error.reason}"
        return Problem(path, line, column, f"{what}; remove it")
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    what = " ".join(str(problem or error).split())
    if context:
        what = f"{what} ({' '.join(str(context).split())})"
    return Problem(path, line, column, f"not valid YAML: {what}; fix the YAML syntax here")


def compile_rule(
    spec: RuleSpec,
    pack: str,
    origin: str,
    path: str = "<rule>",
    node: yaml.Node | None = None,
    text: str = "",
) -> tuple[Rule | None, Problem | None]:
    """Compile one rule; on a problem, say where it is in the file (the extract patterns are
    compiled again by build_rule, from the patterns' cache)."""
    for index, source in enumerate(spec.extract):
        try:
            pattern = compile_pattern(source)
        except PatternError as error:
            where = _child(node, ("extract", index))
            return None, _at(path, where, f"rule {spec.id}: bad extract pattern: {error}")
        if not pattern.groupindex:
            where = _child(node, ("extract", index))
            return None, _at(
                path,
                where,
                f"rule {spec.id}: an extract pattern needs named groups such as (?P<rank>\\d+)",
            )
    groupings = [("dedupe", spec.dedupe.by)]
    if spec.threshold is not None:
        groupings.append(("threshold", spec.threshold.by))
    for key, fields in groupings:
        for index, field in enumerate(fields):
            if resolve_field(field) not in FIELDS:  # a record is grouped by what it holds
                hint = close_matches(field)
                suggestion = f" (did you mean {', '.join(hint)}?)" if hint else ""
                where = _child(node, (key, "by", index))
                return None, _at(
                    path, where, f"rule {spec.id}: {key}.by: unknown field {field!r}{suggestion}"
                )
    when_node = _child(node, ("when",))
    try:
        return build_rule(spec, pack, origin, parse_condition(spec.when)), None
    except ConditionSyntaxError as error:
        return None, _in_condition(
            path, when_node, text, spec, error.line, error.column, str(error)
        )
    except CompileError as error:
        line = spec.when.count("\n", 0, error.loc) + 1
        column = error.loc - (spec.when.rfind("\n", 0, error.loc) + 1) + 1
        return None, _in_condition(path, when_node, text, spec, line, column, str(error))


def _in_condition(
    path: str,
    node: yaml.Node | None,
    text: str,
    spec: RuleSpec,
    line: int,
    column: int,
    message: str,
) -> Problem:
    """A problem at (line, column) of a rule's condition, placed in the file."""
    detail = f"rule {spec.id}: in 'when': {message}"
    if node is None:
        return Problem(path, line, column, detail)
    start = node.start_mark
    style = getattr(node, "style", None)
    if style in ("|", ">"):
        offset = sum(len(row) + 1 for row in spec.when.split("\n")[: line - 1]) + column - 1
        file_line, file_column = _block_position(text, node, offset)
        return Problem(path, file_line, file_column, detail)
    offset = 1 if style in ("'", '"') else 0
    if line == 1:
        return Problem(path, start.line + 1, start.column + 1 + offset + column - 1, detail)
    return Problem(path, start.line + line, column, detail)


def _block_position(text: str, node: yaml.Node, offset: int) -> tuple[int, int]:
    """File line and column of `offset` in the value of a block scalar (`|` or `>`): both
    styles join the content lines with one character, a newline or a space."""
    rows = text.splitlines()[node.start_mark.line + 1 : node.end_mark.line + 1]
    position = 0
    last = (node.start_mark.line + 1, 1)
    for number, row in enumerate(rows, start=node.start_mark.line + 2):
        body = row.strip()
        if not body:
            continue
        indent = len(row) - len(row.lstrip(" "))
        last = (number, indent + 1 + len(body))
        if offset <= position + len(body):
            return number, indent + 1 + (offset - position)
        position += len(body) + 1
    return last


def _validation_problem(path: str, document: yaml.Node | None, item: Any) -> Problem:
    location = tuple(item["loc"])
    node = _node_at(document, location)
    while node is None and location:
        location = location[:-1]
        node = _node_at(document, location)
    key = ".".join(str(part) for part in item["loc"])
    message = item["msg"]
    if item["type"] == "extra_forbidden":
        message = f"unknown key {item['loc'][-1]!r}"
    return _at(path, node, f"{key}: {message}")


def _at(path: str, node: yaml.Node | None, message: str) -> Problem:
    if node is None:
        return Problem(path, 1, 1, message)
    return Problem(path, node.start_mark.line + 1, node.start_mark.column + 1, message)


def _node_at(document: yaml.Node | None, location: tuple[Any, ...]) -> yaml.Node | None:
    return _child(document, location)


def _child(node: yaml.Node | None, location: tuple[Any, ...]) -> yaml.Node | None:
    for part in location:
        if node is None:
            return None
        if isinstance(node, yaml.MappingNode):
            node = next(
                (value for key, value in node.value if getattr(key, "value", None) == part), None
            )
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return None
    return node
