"""The first-mismatch `compare_result_rank{N}_*.json` and `diff_analyze_*.json`, read into tables.

The formats doc gives no concrete layout for these two, so the reader is tolerant by design: it
takes a JSON list of per-operator objects, an object keyed by operator name, an object whose
keys are ranks (`rank0`, `rank_1`) holding either of those, or an object with one such list
inside; each entry carries the compare column names (`NPU Name` or `op_name`/`name` for the
operator, `Cosine`, `MaxAbsErr`, `Result` …). Finding the entries in those shapes is what this
module owns; the rows it builds are those of every compare kind (compare_rows).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from npuwatch.debug_tools.cell_values import metrics_of, text_of, verdict_of
from npuwatch.debug_tools.precision.read.compare_rows import (
    SUMMARY_METRICS,
    TENSOR_METRICS,
    CompareRow,
    CompareTable,
    rank_of,
)
from npuwatch.debug_tools.table_files import decode
from npuwatch.json_input import load_json
from npuwatch.parsers.problem_list import ProblemList
from npuwatch.untrusted_files import read_file

_NAME_KEYS = ("NPU Name", "npu_name", "op_name", "name", "api_name", "NPU_Name")
_RANK_KEY = re.compile(r"^rank_?(\d+)$", re.IGNORECASE)


def read_compare_json(path: Path) -> list[CompareTable]:
    """The first-mismatch `compare_result_rank{N}_*.json` or a `diff_analyze_*.json`: one
    table per rank found in it (see the module docstring for the layouts taken)."""
    kind = "diff_analyze" if path.name.startswith("diff_analyze") else "first_mismatch"
    problems = ProblemList(str(path))
    try:
        document = load_json(decode(read_file(path)))
    except OSError as failure:
        problems.add(0, f"cannot read: {failure.strerror or failure}")
        return [CompareTable(str(path), kind, rank_of(path), [], problems.finish())]
    except json.JSONDecodeError as failure:
        problems.add(failure.lineno, f"not JSON ({failure.msg}); file skipped")
        return [CompareTable(str(path), kind, rank_of(path), [], problems.finish())]
    by_rank = _entries_by_rank(document, rank_of(path))
    if not by_rank:
        problems.add(0, "no per-operator entries (a list or an object of objects) found")
        return [CompareTable(str(path), kind, rank_of(path), [], problems.finish())]
    tables = []
    for rank, entries in by_rank.items():
        rows = []
        for position, (key, entry) in enumerate(entries, start=1):
            name = key or next((text_of(entry.get(k)) for k in _NAME_KEYS if entry.get(k)), None)
            if name is None:
                problems.add(position, f"rank {rank}: entry without an operator name; skipped")
                continue
            metrics = metrics_of(entry, TENSOR_METRICS) or metrics_of(entry, SUMMARY_METRICS)
            verdict_cell = entry.get("Result", entry.get("Accuracy Reached or Not"))
            rows.append(
                CompareRow(
                    name=name.rstrip(","),
                    line=position,
                    metrics=metrics,
                    verdict=verdict_of(verdict_cell),
                    bench_name=text_of(entry.get("Bench Name")),
                    message=text_of(entry.get("Err_message")),
                )
            )
        has_verdict = any(row.verdict is not None for row in rows)
        tables.append(
            CompareTable(str(path), kind, rank, rows, [], "Result" if has_verdict else None)
        )
    found = problems.finish()
    return [
        CompareTable(t.source, t.kind, t.rank, t.rows, found if i == 0 else [], t.verdict_column)
        for i, t in enumerate(tables)
    ]


def _entries_by_rank(
    document: Any, default_rank: int
) -> dict[int, list[tuple[str | None, Mapping[str, Any]]]]:
    if isinstance(document, Mapping):
        ranks = {key: _RANK_KEY.match(str(key)) for key in document}
        if document and all(ranks.values()):
            by_rank = {}
            for key, inner in document.items():
                found = ranks[key]
                assert found is not None  # every key matched above
                entries = _entries(inner)
                if entries:
                    by_rank[int(found.group(1))] = entries
            return by_rank
    entries = _entries(document)
    return {default_rank: entries} if entries else {}


def _entries(document: Any) -> list[tuple[str | None, Mapping[str, Any]]]:
    """Per-operator entries of a list of objects, an object of objects, or an object holding
    one such list."""
    if isinstance(document, list):
        return [(None, item) for item in document if isinstance(item, Mapping)]
    if not isinstance(document, Mapping):
        return []
    if any(key in document for key in _NAME_KEYS):
        return [(None, document)]
    objects = [(str(key), value) for key, value in document.items() if isinstance(value, Mapping)]
    if objects:
        return list(objects)
    lists: Iterable[Any] = (value for value in document.values() if isinstance(value, list))
    return next((_entries(value) for value in lists), [])
