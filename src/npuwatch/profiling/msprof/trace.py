"""Timelines: torch_npu `trace_view.json` and msprof `msprof_*.json` (Chrome trace events).

Only complete events (`"ph": "X"`) become rows; the metadata events (`"ph": "M"`) name their
process (`Ascend Hardware`, `CANN`, `Python`, `Overlap Analysis` ...), thread (`Stream 3`,
`Computing`) and label (`NPU 0`, `CPU`), and flow events (`s`/`f`) are left out. `ts` is a string
of µs since the epoch in real files (a number in some), `dur` a number of µs; an event whose
`ts` or `dur` is not a number is skipped and reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from npuwatch.bounded_numbers import fitting_int
from npuwatch.json_input import load_json
from npuwatch.parsers.problem_list import MAX_PROBLEMS_PER_FILE
from npuwatch.parsers.table_numbers import usable_cell
from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.tables import ParsedTable

PROCESS_NAME = "process_name"
THREAD_NAME = "thread_name"
PROCESS_LABEL = "process_label"
COLUMNS = [
    "name",
    "cat",
    "pid",
    "tid",
    c.START_US,
    c.DURATION_US,
    PROCESS_NAME,
    THREAD_NAME,
    PROCESS_LABEL,
    c.TASK_TYPE,
]
_NPU_LABEL = re.compile(r"^NPU(?:\s+(\d+))?$")


def parse_trace(data: bytes | str, source: str) -> ParsedTable:
    """The complete events of a Chrome trace, with the names of their process and thread."""
    try:
        document = load_json(data)
    except (ValueError, UnicodeDecodeError) as failure:
        return ParsedTable(_frame([]), [f"{source}: not valid JSON ({failure})"])
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        return ParsedTable(_frame([]), [f"{source}: no list of trace events"])
    processes: dict[Any, dict[str, str]] = {}
    threads: dict[tuple[Any, Any], str] = {}
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    skipped = 0
    for number, event in enumerate(events, start=1):
        if not isinstance(event, dict):
            continue
        phase = event.get("ph")
        if phase == "M":
            _metadata(event, processes, threads)
        elif phase == "X":
            start, duration = _number(event.get("ts")), _number(event.get("dur"))
            if start is None or duration is None:
                skipped += 1
                if len(problems) < MAX_PROBLEMS_PER_FILE:
                    problems.append(
                        f"{source}: event {number} ({event.get('name')!r}): ts or dur is not "
                        "a number; skipped"
                    )
                continue
            args = event.get("args")
            task_type = args.get("Task Type") if isinstance(args, dict) else None
            rows.append(
                {
                    "name": event.get("name"),
                    "cat": event.get("cat"),
                    "pid": event.get("pid"),
                    "tid": event.get("tid"),
                    c.START_US: start,
                    c.DURATION_US: duration,
                    c.TASK_TYPE: task_type,
                }
            )
    if skipped > len(problems):
        problems.append(f"{source}: {skipped - len(problems)} more problems not listed")
    frame = _frame(rows)
    if not frame.empty:
        frame[PROCESS_NAME] = [processes.get(pid, {}).get("name") for pid in frame["pid"]]
        frame[PROCESS_LABEL] = [processes.get(pid, {}).get("labels") for pid in frame["pid"]]
        keys = zip(frame["pid"], frame["tid"], strict=True)
        frame[THREAD_NAME] = [threads.get(key) for key in keys]
    return ParsedTable(frame, problems)


def device_of_trace(frame: pd.DataFrame) -> int | None:
    """The NPU the timeline was recorded on: `NPU 3` → 3 (None for a bare `NPU` or several)."""
    devices = set()
    for label in frame[PROCESS_LABEL].dropna().unique():
        match = _NPU_LABEL.match(str(label).strip())
        device = fitting_int(match[1]) if match and match[1] is not None else None
        if device is not None:
            devices.add(device)
    return devices.pop() if len(devices) == 1 else None


def _metadata(
    event: Mapping[str, Any],
    processes: dict[Any, dict[str, str]],
    threads: dict[tuple[Any, Any], str],
) -> None:
    args = event.get("args")
    if not isinstance(args, dict):
        return
    name = event.get("name")
    if name == "process_name" and isinstance(args.get("name"), str):
        processes.setdefault(event.get("pid"), {})["name"] = args["name"]
    elif name == "process_labels" and isinstance(args.get("labels"), str):
        processes.setdefault(event.get("pid"), {})["labels"] = args["labels"]
    elif name == "thread_name" and isinstance(args.get("name"), str):
        threads[(event.get("pid"), event.get("tid"))] = args["name"]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame(rows, columns=COLUMNS)
    frame[c.START_US] = frame[c.START_US].astype("float64")
    frame[c.DURATION_US] = frame[c.DURATION_US].astype("float64")
    return frame


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return usable_cell(value)  # None for text, inf, nan and a JSON int past 64 bits
