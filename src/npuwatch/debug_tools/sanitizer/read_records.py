"""The records a msSanitizer report is read into, and the draft each is built from.

One `SanitizerRecord` per error, warning, leak entry or summary line, with the call-stack
`Frame`s and, for a race, its two `RaceEvent`s; a `SanitizerReport` is the records of one file
and its problems. The `RecordDraft` gathers a record's fields line by line and knows which lines
a record of each kind always has, so a record cut short by the end of the report (or by the
next record) is kept and marked incomplete. The line grammar that fills a draft is
`read_grammar`; the loop over a report's lines is `read`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MEMORY_ERRORS = frozenset(
    {"illegal_read", "illegal_write", "misaligned_access", "uninitialized_read", "out_of_bounds"}
)
"""The kinds whose record always has an `at` line, a block line and a code location."""


@dataclass(frozen=True)
class Frame:
    """One call-stack frame, `#<index> <file>:<line>:<column>`."""

    index: int
    file: str
    line: int
    column: int | None


@dataclass(frozen=True)
class RaceEvent:
    """One side of a race hazard: which pipe read or wrote, where, and from which code."""

    pipe: str
    access: str
    address: str
    block: str
    device: int
    thread: str | None
    pc: str | None
    serial_no: int | None
    code_file: str | None
    code_line: int | None
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class SanitizerRecord:
    """One error, warning or summary of a report, with what its lines say about it."""

    source: str
    line: int
    """The 1-based line of the report where the record starts."""
    level: str
    """ERROR, WARNING, SUMMARY (leak/unused totals) or INFO (the banner)."""
    kind: str
    message: str
    kernel: str | None = None
    size_bytes: int | None = None
    address: str | None = None
    memory_space: str | None = None
    access: str | None = None
    device: int | None = None
    block: str | None = None
    """As printed: `aiv(0-1)`, `aiv(0),aic(0)`, `aicore(3)`, `0 (aiv)`."""
    thread: str | None = None
    pc: str | None = None
    serial_no: int | None = None
    code_file: str | None = None
    code_line: int | None = None
    frames: tuple[Frame, ...] = ()
    events: tuple[RaceEvent, ...] = ()
    from_pipe: str | None = None
    to_pipe: str | None = None
    register: str | None = None
    expected_value: str | None = None
    current_value: str | None = None
    module_id: int | None = None
    count: int | None = None
    """Allocations of a leak/unused summary; kernels of the banner."""
    complete: bool = True
    lines: tuple[tuple[int, str], ...] = ()
    """The raw report lines of the record, with their line numbers."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SanitizerReport:
    """Every record of one report file, and what could not be read."""

    source: str
    records: list[SanitizerRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class RecordDraft:
    """The record being read: its fields so far, and the race event being read."""

    def __init__(self, source: str, number: int, text: str, level: str, kind: str) -> None:
        self.fields: dict[str, Any] = {
            "source": source,
            "line": number,
            "level": level,
            "kind": kind,
            "message": text,
        }
        self.lines: list[tuple[int, str]] = []
        self.frames: list[Frame] = []
        self.events: list[dict[str, Any]] = []

    def frame(self, frame: Frame) -> None:
        (self.events[-1]["frames"] if self.events else self.frames).append(frame)

    def missing(self) -> str | None:
        """What a record of this kind always has and this one lacks, or None."""
        kind, has = self.fields["kind"], self.fields.get
        if kind in MEMORY_ERRORS or kind == "illegal_free":
            needed = {"an `at` line": has("address"), "the code location": has("serial_no")}
            if kind != "illegal_free":
                needed["the block line"] = has("block")
            lacking = [name for name, value in needed.items() if value is None]
            return ", ".join(lacking) if lacking else None
        if kind == "memory_leak" and has("code_file") is None:
            return "the `allocated in` line"
        if kind.endswith("_hazard") and len(self.events) < 2:
            return f"the second pipe event ({len(self.events)} of 2)"
        if kind.endswith(("_set_flag", "_wait_flag")) and has("block") is None:
            return "the block line"
        return None

    def build(self, truncated: bool) -> SanitizerRecord:
        events = tuple(
            RaceEvent(**{**event, "frames": tuple(event["frames"])}) for event in self.events
        )
        return SanitizerRecord(
            **self.fields,
            frames=tuple(self.frames),
            events=events,
            complete=not truncated,
            lines=tuple(self.lines),
        )
