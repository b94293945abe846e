"""Rank and software versions of a run, from torch_npu's `profiler_info*.json` and
`profiler_metadata.json`.

Their layout has changed between releases and is not documented field by field, so the search
is lenient: any key spelled like `CANN`, `cann_version` or `CANN Version` (a string, or an object
holding a `version`), `torch_npu`/`torch_npu_version`, and `rank_id`/`rank` (a non-negative
integer), at any depth. `profiler_info_<rank>.json` names the rank too. No pandas here: the agent
calls this when it sees a run finish.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from npuwatch.bounded_numbers import LARGEST, fitting_int
from npuwatch.json_input import load_json

_NOT_WORD = re.compile(r"[^0-9a-z]+")
_RANK_IN_NAME = re.compile(r"^profiler_info_(\d+)\.json$")
_CANN_KEYS = frozenset({"cann", "cannversion", "cannpackageversion"})
_TORCH_NPU_KEYS = frozenset({"torchnpu", "torchnpuversion", "ptaversion"})
_RANK_KEYS = frozenset({"rankid", "rank"})


@dataclass(frozen=True)
class RunMetadata:
    """What the run says about itself; None where it does not say."""

    rank: int | None = None
    cann_version: str | None = None
    torch_npu_version: str | None = None
    problems: tuple[str, ...] = ()


def parse_run_metadata(files: Mapping[str, bytes]) -> RunMetadata:
    """Rank and versions from the metadata files of a run (file name → content).

    The first value found wins, in the order the files are given; a file that is not JSON is a
    problem, not an error.
    """
    rank: int | None = None
    cann: str | None = None
    torch_npu: str | None = None
    problems: list[str] = []
    for name, content in files.items():
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        match = _RANK_IN_NAME.match(base)
        if rank is None and match:
            rank = fitting_int(match[1])
        try:
            document = load_json(content)
        except (ValueError, UnicodeDecodeError) as failure:
            problems.append(f"{name}: not valid JSON ({failure})")
            continue
        for key, value in _items(document):
            if cann is None and key in _CANN_KEYS:
                cann = _version(value)
            elif torch_npu is None and key in _TORCH_NPU_KEYS:
                torch_npu = _version(value)
            elif rank is None and key in _RANK_KEYS:
                rank = _rank(value)
    return RunMetadata(rank, cann, torch_npu, tuple(problems))


def _items(document: Any) -> Iterator[tuple[str, Any]]:
    """Every (normalised key, value) pair of a JSON document, depth first."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield _NOT_WORD.sub("", str(key).lower()), value
            yield from _items(value)
    elif isinstance(document, list):
        for value in document:
            yield from _items(value)


def _version(value: Any) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    if isinstance(value, dict):
        for key, inner in value.items():
            if "version" in str(key).lower():
                return _version(inner)
    return None


def _rank(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= LARGEST else None
    if isinstance(value, str) and value.strip().isdigit():
        return fitting_int(value.strip())
    return None
