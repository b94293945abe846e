"""msOpProf's trace.json, read and summed: block spans, pipe busy time, communication tasks, gaps.

Two writers make the same Chrome-trace document (`{"profilingType":"op","displayTimeUnit":"ns",
"schemaVersion":1|2,"traceEvents":[…]}`, `ts`/`dur` in µs):

- **on board** (`msprof op`, MC2/LCCL operators, PipeTimeline): block events on pid `BLOCK`, as
  `AIC BLOCK<n> START`/`END` marks (dur 0) or as timed events, one `AI_CORE` event, and the
  HCCL tasks of MC2 operators, whose `args` say what moved where (`size(Byte)`, `link type`,
  `transport type`, `src rank`, `dst rank`, `bandwidth(GB/s)` …);
- **the simulator** (`msprof op simulator`, all cores in `simulator/trace.json`, one core in
  `simulator/<core>/trace.json`): an `X` event per instruction on its core (pid) and pipe (tid),
  SET_FLAG/WAIT_FLAG as `B`/`E` pairs sharing an `id`, flows (`ph` `s`/`t`) between pipes.

What a trace holds is summed here: each block's span (its first start to its last end), each
pipe's busy time (the union of its instructions, since they may overlap), the communication
tasks, the flag waits and the longest idle gaps of any lane. A file cut short is read up to its
last whole event; an unknown event is skipped; both are problems (`file:line: what` or
`file: what`), never exceptions. visualize_data.bin stores the same JSON (`read_visualize`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from npuwatch.json_input import load_json
from npuwatch.profiling.opprof.read_comm import (
    CommTask,
    LinkTotal,
    comm_task,
    is_comm_task,
    link_totals,
    number,
)
from npuwatch.untrusted_files import read_file

GAPS_KEPT = 5
"""The longest idle gaps kept of a trace."""
_OTHER_PHASES = frozenset({"M", "t", "f", "i", "I", "C"})
"""Metadata, flow ends, instants and counters: known, and nothing to add up."""
_NOT_INSTRUCTIONS = frozenset({"cache_time", "ccu_time"})
_BLOCK_MARK = re.compile(r"^(?P<block>.*BLOCK\s*\d+)(?:\s+(?P<edge>START|END))?$")
_SCHEMA = re.compile(r'"schemaVersion"\s*:\s*(\d+)')


@dataclass(frozen=True)
class BlockSpan:
    """One block (`AIC BLOCK0`) on one core lane: its first start to its last end, µs."""

    block: str
    lane: str
    start_us: float
    end_us: float

    @property
    def span_us(self) -> float:
        return self.end_us - self.start_us


@dataclass(frozen=True)
class PipeBusy:
    """One pipe (tid) of one simulated core (pid): its instructions and the time they cover."""

    core: str
    pipe: str
    instructions: int
    busy_us: float


@dataclass(frozen=True)
class FlagWait:
    """The `B`/`E` pairs of one name (SET_FLAG, WAIT_FLAG) and the time between them."""

    name: str
    pairs: int
    total_us: float


@dataclass(frozen=True)
class Gap:
    """Idle time on one lane (`pid/tid`) between two of its events."""

    lane: str
    start_us: float
    gap_us: float


@dataclass(frozen=True)
class OpTrace:
    """What one trace.json (or visualize_data.bin Trace block) holds, summed."""

    source: str
    schema_version: int | None
    events: int
    phases: dict[str, int]
    """Events per `ph`."""
    blocks: tuple[BlockSpan, ...]
    core_span_us: float | None
    """The `AI_CORE` event's duration."""
    pipes: tuple[PipeBusy, ...]
    comm_tasks: tuple[CommTask, ...]
    flags: tuple[FlagWait, ...]
    flows: dict[str, int]
    """Flows started (`ph` `s`) per category, `MTE2ToVECTOR`."""
    gaps: tuple[Gap, ...]
    """The GAPS_KEPT longest, the longest first."""
    complete: bool = True
    """False when the file was cut short and only its first events were read."""

    def links(self) -> list[LinkTotal]:
        """The communication tasks per (link type, transport type), the most bytes first."""
        return link_totals(self.comm_tasks)


def read_trace(path: Path, problems: list[str]) -> OpTrace | None:
    """The trace at `path`; None (and a problem) when it cannot be read or holds no events."""
    try:
        text = read_file(path).decode("utf-8", errors="replace")
    except OSError as failure:
        problems.append(f"{path}: cannot read ({failure.strerror or failure})")
        return None
    return parse_trace(text, str(path), problems)


def parse_trace(text: str, source: str, problems: list[str]) -> OpTrace | None:
    """A trace document's text summed; a cut-short one up to its last whole event."""
    complete = True
    try:
        document: Any = load_json(text)
    except json.JSONDecodeError as failure:
        whole = _whole_events(text)
        problems.append(
            f"{source}:{failure.lineno}: not whole JSON ({failure.msg}, column {failure.colno});"
            f" read the {len(whole)} events before it"
        )
        found = _SCHEMA.search(text)
        document = {"traceEvents": whole, "schemaVersion": int(found.group(1)) if found else None}
        complete = False
    if isinstance(document, list):  # Chrome also accepts a bare array of events
        document = {"traceEvents": document}
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        problems.append(f"{source}: no traceEvents list; not a trace")
        return None
    version = document.get("schemaVersion")
    totals = _Totals()
    for index, event in enumerate(events):
        totals.add(index, event)
    problems.extend(f"{source}: {what}" for what in totals.problems())
    return totals.trace(source, version if isinstance(version, int) else None, complete)


def _whole_events(text: str) -> list[Any]:
    """The events of a cut-short `traceEvents` array, up to the first one that is not whole."""
    start = text.find('"traceEvents"')
    index = text.find("[", start) + 1 if start >= 0 else 0
    events: list[Any] = []
    decoder = json.JSONDecoder()
    while 0 < index < len(text):
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            break
        try:
            event, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            break
        events.append(event)
    return events


class _Totals:
    """The events of one trace added up as they come."""

    def __init__(self) -> None:
        self.events = 0
        self.phases: Counter[str] = Counter()
        self.skipped: dict[str, list[int]] = {}
        self.blocks: dict[tuple[str, str], list[float]] = {}
        self.edges: dict[tuple[str, str], set[str]] = {}
        self.core_span: float | None = None
        self.lanes: dict[tuple[str, str], list[tuple[float, float]]] = {}
        self.instructions: Counter[tuple[str, str]] = Counter()
        self.comm: list[CommTask] = []
        self.open_flags: dict[tuple[str, ...], tuple[str, float]] = {}
        self.flags: dict[str, list[float]] = {}
        self.flows: Counter[str] = Counter()

    def skip(self, index: int, why: str) -> None:
        self.skipped.setdefault(why, []).append(index)

    def add(self, index: int, event: object) -> None:
        self.events += 1
        if not isinstance(event, dict):
            self.skip(index, "not a JSON object")
            return
        phase = str(event.get("ph", ""))
        self.phases[phase] += 1
        if phase == "X":
            self._complete(index, event)
        elif phase in ("B", "E"):
            self._flag(index, phase, event)
        elif phase == "s":
            self.flows[str(event.get("cat", ""))] += 1
        elif phase not in _OTHER_PHASES:
            self.skip(index, f"unknown ph {phase!r}")

    def _complete(self, index: int, event: dict[str, Any]) -> None:
        ts, dur = number(event.get("ts")), number(event.get("dur", 0))
        if ts is None or dur is None or dur < 0:
            self.skip(index, "X event without a number ts and dur")
            return
        name, pid, tid = (str(event.get(key, "")) for key in ("name", "pid", "tid"))
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        mark = _BLOCK_MARK.match(name)
        if name == "AI_CORE":
            self.core_span = max(self.core_span or 0.0, dur)
            return
        if mark:
            key = (mark.group("block"), tid)
            self.blocks.setdefault(key, []).extend((ts, ts + dur))
            if mark.group("edge"):
                self.edges.setdefault(key, set()).add(mark.group("edge"))
        elif is_comm_task(args):
            self.comm.append(comm_task(name, dur, args))
        elif name not in _NOT_INSTRUCTIONS:
            self.instructions[(pid, tid)] += 1
        if dur > 0:
            self.lanes.setdefault((pid, tid), []).append((ts, ts + dur))

    def _flag(self, index: int, phase: str, event: dict[str, Any]) -> None:
        ts = number(event.get("ts"))
        if ts is None:
            self.skip(index, f"{phase} event without a number ts")
            return
        ident = event.get("id")
        key = (str(ident),) if ident is not None else (str(event.get("pid")), str(event.get("tid")))
        if phase == "B":
            self.open_flags[key] = (str(event.get("name", "")), ts)
        elif key in self.open_flags:
            name, start = self.open_flags.pop(key)
            self.flags.setdefault(name, []).append(ts - start)
        else:
            self.skip(index, "E event without its B")

    def problems(self) -> list[str]:
        said = [
            f"event {where[0]}: {why}; skipped"
            + (f" ({len(where)} such events)" if len(where) > 1 else "")
            for why, where in self.skipped.items()
        ]
        said += [
            f"{block} on {lane or '?'}: {next(iter(edges))} without its "
            f"{'END' if 'START' in edges else 'START'}; block not counted"
            for (block, lane), edges in self.edges.items()
            if len(edges) == 1
        ]
        if self.open_flags:
            said.append(f"{len(self.open_flags)} B events without their E; not counted")
        return said

    def trace(self, source: str, version: int | None, complete: bool) -> OpTrace:
        blocks = [
            BlockSpan(block, lane, min(times), max(times))
            for (block, lane), times in self.blocks.items()
            if len(self.edges.get((block, lane), ("START", "END"))) == 2
        ]
        pipes = [
            PipeBusy(core, pipe, count, _union(self.lanes.get((core, pipe), [])))
            for (core, pipe), count in sorted(self.instructions.items())
        ]
        gaps = [gap for lane, spans in self.lanes.items() for gap in _gaps("/".join(lane), spans)]
        gaps.sort(key=lambda gap: (-gap.gap_us, gap.lane, gap.start_us))
        return OpTrace(
            source=source,
            schema_version=version,
            events=self.events,
            phases=dict(sorted(self.phases.items())),
            blocks=tuple(sorted(blocks, key=lambda b: (b.lane, b.block))),
            core_span_us=self.core_span,
            pipes=tuple(pipes),
            comm_tasks=tuple(self.comm),
            flags=tuple(FlagWait(n, len(t), sum(t)) for n, t in sorted(self.flags.items())),
            flows=dict(sorted(self.flows.items())),
            gaps=tuple(gaps[:GAPS_KEPT]),
            complete=complete,
        )


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _union(spans: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in _merged(spans))


def _gaps(lane: str, spans: list[tuple[float, float]]) -> list[Gap]:
    merged = _merged(spans)
    return [Gap(lane, a[1], b[0] - a[1]) for a, b in pairwise(merged)]
