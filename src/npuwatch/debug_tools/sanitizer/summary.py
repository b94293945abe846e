"""What msSanitizer reports and msaicerr outputs say, grouped: `npuwatch sanitizer summary`.

msSanitizer records are grouped by level, kind and kernel: how many, on which devices and
blocks, the first one's place in the report, its code location and call stack (or, for a race,
its two pipe events), and advice for the kind (`advice`). Leaks are totalled, and the
report's own SUMMARY lines are set beside the totals. Every error msaicerr analysed is listed
with its conclusion, kernel, device/core, error code, pcs, single-operator test result and
advice. Any ERROR record or msaicerr error is a finding (exit 1); warnings alone are listed and
are not. The text rendering is `text`.

The msaicerr errors are made in `aicore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from npuwatch.debug_tools.sanitizer.advice import advice_for
from npuwatch.debug_tools.sanitizer.aicore import AicoreError, aicore_errors
from npuwatch.debug_tools.sanitizer.read_events import code_location, one_line, source_frame
from npuwatch.debug_tools.sanitizer.read_msaicerr import MsaicerrOutput
from npuwatch.debug_tools.sanitizer.read_records import (
    Frame,
    RaceEvent,
    SanitizerRecord,
    SanitizerReport,
)

SCHEMA_VERSION = 1
DEFAULT_TOP = 20
GROUPED_LEVELS = ("ERROR", "WARNING")


@dataclass(frozen=True)
class ReportInfo:
    """One report file: how many records of each level, kernels checked, cut short or not."""

    source: str
    errors: int
    warnings: int
    kernels_checked: int | None
    complete: bool


@dataclass(frozen=True)
class MsaicerrInfo:
    """One msaicerr info_* folder: the errors its README.txt lists and the ones it analysed."""

    folder: str
    listed: int
    analysed: int


@dataclass(frozen=True)
class Group:
    """The records of one level, kind and kernel, shown through the first of them."""

    level: str
    kind: str
    kernel: str | None
    count: int
    memory_spaces: list[str]
    devices: list[int]
    blocks: list[str]
    total_bytes: int | None
    first_at: str
    """`report:line` of the first record."""
    first: str
    """The first record in one line."""
    code: str | None
    stack: list[str]
    events: list[str]
    advice: str


@dataclass(frozen=True)
class Leaks:
    """The leak check: entries found and their bytes, and what the report's SUMMARY says."""

    count: int
    bytes: int
    summary_bytes: int | None
    summary_allocations: int | None
    allocations: list[str]
    unused_count: int
    unused_bytes: int


@dataclass(frozen=True)
class SanitizerSummary:
    """Everything `npuwatch sanitizer summary` reports."""

    root: str
    top: int
    reports: list[ReportInfo]
    msaicerr_outputs: list[MsaicerrInfo]
    errors: int
    warnings: int
    groups: list[Group]
    groups_total: int
    leaks: Leaks
    aicore_errors: list[AicoreError]
    msaicerr_log: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def has_findings(self) -> bool:
        """An ERROR record or an analysed AI Core error (warnings alone are not findings)."""
        return self.errors > 0 or bool(self.aicore_errors)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, **asdict(self)}


def summarise_sanitizer(
    reports: Sequence[SanitizerReport],
    msaicerr: Sequence[MsaicerrOutput],
    *,
    root: str,
    top: int = DEFAULT_TOP,
    problems: Sequence[str] = (),
) -> SanitizerSummary:
    records = [record for report in reports for record in report.records]
    groups = _groups(records)
    return SanitizerSummary(
        root=root,
        top=top,
        reports=[_report_info(report) for report in reports],
        msaicerr_outputs=[
            MsaicerrInfo(output.folder, len(output.entries), len(output.errors))
            for output in msaicerr
        ],
        errors=sum(record.level == "ERROR" for record in records),
        warnings=sum(record.level == "WARNING" for record in records),
        groups=groups[:top],
        groups_total=len(groups),
        leaks=_leaks(records),
        aicore_errors=[error for output in msaicerr for error in aicore_errors(output)],
        msaicerr_log=[
            f"{output.folder}/debug_info.txt:{line.line}: [{line.level}] {line.message}"
            for output in msaicerr
            for line in output.debug
        ],
        problems=[
            *problems,
            *(problem for report in reports for problem in report.problems),
            *(problem for output in msaicerr for problem in output.problems),
        ],
    )


def _report_info(report: SanitizerReport) -> ReportInfo:
    banners = [record.count or 0 for record in report.records if record.kind == "detection_start"]
    return ReportInfo(
        source=report.source,
        errors=sum(record.level == "ERROR" for record in report.records),
        warnings=sum(record.level == "WARNING" for record in report.records),
        kernels_checked=sum(banners) if banners else None,
        complete=all(record.complete for record in report.records),
    )


def _groups(records: Sequence[SanitizerRecord]) -> list[Group]:
    members: dict[tuple[str, str, str | None], list[SanitizerRecord]] = {}
    for record in records:
        if record.level in GROUPED_LEVELS:
            members.setdefault((record.level, record.kind, record.kernel), []).append(record)
    ordered = sorted(
        members.values(),
        key=lambda group: (GROUPED_LEVELS.index(group[0].level), -len(group)),
    )
    return [_group(group) for group in ordered]


def _group(records: list[SanitizerRecord]) -> Group:
    first = records[0]
    sizes = [record.size_bytes for record in records if record.size_bytes is not None]
    devices = {record.device for record in records} | {
        event.device for record in records for event in record.events
    }
    blocks = [record.block for record in records if record.block] + [
        f"{event.block}" for record in records for event in record.events
    ]
    return Group(
        level=first.level,
        kind=first.kind,
        kernel=first.kernel,
        count=len(records),
        memory_spaces=_unique(record.memory_space for record in records),
        devices=sorted(device for device in devices if device is not None),
        blocks=_unique(blocks),
        total_bytes=sum(sizes) if sizes else None,
        first_at=f"{first.source}:{first.line}",
        first=one_line(first),
        code=code_location(first),
        stack=_stack(first.frames, first.pc, first.serial_no),
        events=[_event(event) for event in first.events],
        advice=advice_for(first.kind, first.memory_space),
    )


def _stack(frames: Sequence[Frame], pc: str | None, serial_no: int | None) -> list[str]:
    """The frames as printed (`#0 file:line:col`), the kernel's own marked with `<-`."""
    own = source_frame(tuple(frames))
    lines = [f"pc {pc} (serialNo:{serial_no})"] if pc else []
    for frame in frames:
        column = f":{frame.column}" if frame.column is not None else ""
        mark = "   <- kernel source" if frame is own and len(frames) > 1 else ""
        lines.append(f"#{frame.index} {frame.file}:{frame.line}{column}{mark}")
    return lines


def _event(event: RaceEvent) -> str:
    thread = f" thread {event.thread}" if event.thread else ""
    code = source_frame(event.frames)
    where = f"{code.file}:{code.line}" if code else (event.code_file or "")
    pc = f" pc {event.pc} (serialNo:{event.serial_no})" if event.pc else ""
    at = f" at {where}" if where else ""
    return f"{event.pipe} {event.access}{thread} in block {event.block}{pc}{at}"


def _leaks(records: Sequence[SanitizerRecord]) -> Leaks:
    leaks = [record for record in records if record.kind == "memory_leak"]
    unused = [record for record in records if record.kind == "unused_memory"]
    summaries = [record for record in records if record.kind == "leak_summary"]
    return Leaks(
        count=len(leaks),
        bytes=sum(record.size_bytes or 0 for record in leaks),
        summary_bytes=sum(record.size_bytes or 0 for record in summaries) if summaries else None,
        summary_allocations=sum(record.count or 0 for record in summaries) if summaries else None,
        allocations=[
            f"{record.size_bytes} bytes at {record.address} allocated in "
            f"{code_location(record) or '?'} ({record.source}:{record.line})"
            for record in leaks
        ],
        unused_count=len(unused),
        unused_bytes=sum(record.size_bytes or 0 for record in unused),
    )


def _unique(values: Any) -> list[Any]:
    return sorted({value for value in values if value is not None}, key=str)
