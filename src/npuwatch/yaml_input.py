"""Reading YAML that an operator (or whoever could write the file) wrote: its shape is checked
before it is built.

PyYAML builds a document by recursion, one level per nested collection: libyaml's C loader
overflows the C stack and kills the process (a segmentation fault) on a few hundred thousand
`[`, and the Python loader raises RecursionError long before. Aliases are built as shared
references, so a few lines of them (`a: &a [x, x]`, `b: &b [*a, *a]` …) stand for more items
than memory holds once a validator walks them. Both are refused here, from the tokens alone (the
scanner does not recurse), with the place in the file: no npuwatch YAML file needs either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

MAX_NESTING = 64
"""Collections inside collections, at most: a rule pack needs 5, a web configuration 3."""
MAX_ALIASES = 100
"""References to anchors, at most (a pack may share an advice text or a list)."""

_OPENING = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSING = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


@dataclass(frozen=True)
class ShapeProblem:
    """What is wrong with the document's shape, and where (1-based line and column)."""

    reason: str
    line: int
    column: int


def shape_problem(text: str, loader_class: Any = yaml.SafeLoader) -> ShapeProblem | None:
    """Why the YAML `text` is nested too deep or holds too many aliases, or None (a syntax
    error is left to the load, which says it better)."""
    loader = loader_class(text)
    depth = aliases = 0
    try:
        while (token := loader.get_token()) is not None:
            if isinstance(token, _OPENING):
                depth += 1
                if depth > MAX_NESTING:
                    return _at(token, f"collections nested deeper than {MAX_NESTING}")
            elif isinstance(token, _CLOSING):
                depth -= 1
            elif isinstance(token, yaml.AliasToken):
                aliases += 1
                if aliases > MAX_ALIASES:
                    return _at(token, f"more than {MAX_ALIASES} aliases (*name)")
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return None


def _at(token: Any, reason: str) -> ShapeProblem:
    mark = token.start_mark
    return ShapeProblem(reason, mark.line + 1, mark.column + 1)
