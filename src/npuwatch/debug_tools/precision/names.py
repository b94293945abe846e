"""What an msprobe/ptdbg tensor name says: its operator, direction and the model layer it is in.

msprobe names a compared tensor `<operator>.<tensor>`: modules `Module.layers.3.mlp.Linear.
forward.0.output.0` (module path, class, direction, call number), APIs `Tensor.add.12.forward.
output.0` or `Torch.matmul.3.forward.input.0`; 2023 ptdbg joined the same parts with `_`
(`Functional_linear_0_forward_output`). Names of other tools (msit's `Sub_26Mul_28`) are
operators of their own, without direction or layer.

The layer of a module is the prefix of its path up to the first number (`layers.3` of
`layers.3.mlp`, `language_model.encoder.layers.0` of a Megatron path; a path without a number,
`embedding`, is its own first part), with wrapper parts `module.` dropped in front. APIs carry
no module path: an API belongs to the layer of the nearest module named before it in execution
order, since msprobe records a module as it is entered, before the APIs it calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_OPERATOR = re.compile(
    r"^(?P<op>.+?[._](?P<direction>forward|backward)(?:[._]\d+)?)"
    r"(?:[._](?P<tensor>(?:input|output|kwargs|parameters|grad)\b.*))?$"
)
_MODULE = re.compile(
    r"^Module[._](?P<path>.+)[._](?P<cls>[^._]+)[._](?:forward|backward)(?:[._]\d+)?$"
)


@dataclass(frozen=True)
class TensorName:
    """A compared tensor's name taken apart."""

    name: str
    operator: str
    tensor: str | None
    """`output.0`, `input.1` …; None when the name is the operator itself."""
    direction: str | None
    """`forward` or `backward`; None for names that do not say."""
    module_layer: str | None
    """The layer when the operator is a module; None for an API (see `assign_layers`)."""


def split_name(name: str) -> TensorName:
    found = _OPERATOR.match(name)
    if found is None:
        return TensorName(name, name, None, None, None)
    operator = found.group("op")
    module = _MODULE.match(operator)
    layer = _layer_of(module.group("path")) if module else None
    return TensorName(name, operator, found.group("tensor"), found.group("direction"), layer)


def assign_layers(names: Iterable[TensorName]) -> list[str | None]:
    """The layer of each name in execution order: a module's own, an API's inherited from the
    module before it (None before the first module)."""
    layers: list[str | None] = []
    current: str | None = None
    for name in names:
        if name.module_layer is not None:
            current = name.module_layer
        layers.append(current)
    return layers


def _layer_of(path: str) -> str:
    parts = path.split(".")
    while len(parts) > 1 and parts[0] == "module":
        parts = parts[1:]
    for position, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: position + 1])
    return parts[0]
