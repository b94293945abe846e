"""msprobe overflow_check's `anomaly_analyze_*.json`: the first INF/NaN nodes of each rank.

The layout (../shared/design/formats/msprobe.md §3.1) is `{"rank_N": [node, ...]}`, each node
`{"op_name", "data_info": {"input_args", "input_kwargs", "output"}, "construct_info",
"stack_info"}`, nodes in execution order, so a rank's first node is where INF/NaN first
appeared. The doc's own sample has a comma inside the op name (`"Tensor.op_name.0.forward,"`),
which is stripped. Stack information may be an object (name → frames) or a list of frames.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npuwatch.debug_tools.table_files import decode
from npuwatch.json_input import load_json
from npuwatch.untrusted_files import read_file

_RANK_KEY = re.compile(r"^rank_?(\d+)$", re.IGNORECASE)
_STATISTICS = ("Max", "Min", "Mean", "Norm")


@dataclass(frozen=True)
class AnomalyNode:
    """One node whose inputs were finite and whose outputs were not."""

    rank: int
    position: int
    """1 for the rank's first anomaly."""
    op_name: str
    bad_outputs: list[str] = field(default_factory=list)
    """`output.0 Max=inf`: the output statistics that are INF or NaN."""
    stack: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OverflowFile:
    """The anomaly nodes of one anomaly_analyze file, per rank in file order."""

    source: str
    nodes: list[AnomalyNode] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def first_per_rank(self) -> list[AnomalyNode]:
        firsts: dict[int, AnomalyNode] = {}
        for node in self.nodes:
            firsts.setdefault(node.rank, node)
        return [firsts[rank] for rank in sorted(firsts)]


def read_anomaly_analyze(path: Path) -> OverflowFile:
    """The nodes of an `anomaly_analyze_*.json`; problems instead of errors when damaged."""
    source = str(path)
    try:
        document = load_json(decode(read_file(path)))
    except OSError as failure:
        return OverflowFile(source, problems=[f"{source}:0: cannot read: {failure.strerror}"])
    except json.JSONDecodeError as failure:
        return OverflowFile(
            source, problems=[f"{source}:{failure.lineno}: not JSON ({failure.msg}); skipped"]
        )
    if not isinstance(document, Mapping):
        return OverflowFile(source, problems=[f"{source}:1: expected an object of rank_N keys"])
    nodes: list[AnomalyNode] = []
    problems: list[str] = []
    for key, entries in document.items():
        found = _RANK_KEY.match(str(key))
        if found is None or not isinstance(entries, list):
            problems.append(f"{source}:0: {key!r} is not a rank_N list of nodes; skipped")
            continue
        rank = int(found.group(1))
        for position, entry in enumerate(entries, start=1):
            if not isinstance(entry, Mapping) or not entry.get("op_name"):
                problems.append(f"{source}:0: {key}[{position - 1}] has no op_name; skipped")
                continue
            nodes.append(
                AnomalyNode(
                    rank=rank,
                    position=position,
                    op_name=str(entry["op_name"]).strip().rstrip(","),
                    bad_outputs=_bad_outputs(entry.get("data_info")),
                    stack=_frames(entry.get("stack_info")),
                )
            )
    return OverflowFile(source, nodes, problems)


def _bad_outputs(data_info: Any) -> list[str]:
    if not isinstance(data_info, Mapping):
        return []
    outputs = data_info.get("output")
    if isinstance(outputs, Mapping):
        outputs = [outputs]
    if not isinstance(outputs, list):
        return []
    bad = []
    for position, output in enumerate(outputs):
        if not isinstance(output, Mapping):
            continue
        for statistic in _STATISTICS:
            value = output.get(statistic)
            if _not_finite(value):
                bad.append(f"output.{position} {statistic}={value}")
    return bad


def _not_finite(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"inf", "-inf", "+inf", "nan"}
    return isinstance(value, float) and not math.isfinite(value)


def _frames(stack: Any) -> list[str]:
    """The stack frames as text lines, whatever the nesting (object of lists, list of lists)."""
    if isinstance(stack, str):
        return [stack]
    if isinstance(stack, Mapping):
        return [frame for value in stack.values() for frame in _frames(value)]
    if isinstance(stack, list):
        return [frame for value in stack for frame in _frames(value)]
    return []
