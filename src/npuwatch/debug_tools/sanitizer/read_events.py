"""A msSanitizer record said in one line, and as the fields of a log event.

`one_line` and `code_location` are how `npuwatch sanitizer summary`, `scan` and the agent name
a record; `source_frame` picks the kernel's own frame out of the CANN headers' frames;
`event_fields` is what a log event of a record holds. They read finished records, so they live
apart from the reading of a report (`read`, `read_grammar`).
"""

from __future__ import annotations

from typing import Any

from npuwatch.debug_tools.sanitizer.read_records import Frame, SanitizerRecord


def source_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The frame in the kernel's own source: the first outside the CANN headers (tikcpp,
    tikcfw, kernel_operator_*), else the outermost one."""
    for frame in frames:
        if not any(marker in frame.file for marker in _LIBRARY_MARKERS):
            return frame
    return frames[-1] if frames else None


_LIBRARY_MARKERS = ("/tikcpp/", "/tikcfw/", "/compiler/", "kernel_operator", "/ascendc/")


def one_line(record: SanitizerRecord) -> str:
    """The record in one line: its message, where, which block and device, which code."""
    message = record.message.rstrip(":")
    parts = [message]
    if record.address and record.memory_space:
        parts.append(f"at {record.address} on {record.memory_space}")
    if record.kernel and record.kernel not in message:
        parts.append(f"in {record.kernel}")
    if record.from_pipe:
        parts.append(f"from {record.from_pipe} to {record.to_pipe}")
    if record.block:
        thread = f"thread {record.thread} " if record.thread else ""
        parts.append(f"{thread}block {record.block}")
    if record.device is not None:
        parts.append(f"device {record.device}")
    parts = [message, *(part for part in parts[1:] if part not in message)]
    for event in record.events:
        parts.append(f"{event.pipe} {event.access}" + (f" pc {event.pc}" if event.pc else ""))
    code = code_location(record)
    if code:
        allocated = record.kind in {"memory_leak", "unused_memory"}
        parts.append(f"{'allocated in' if allocated else 'code'} {code}")
    elif record.pc:
        parts.append(f"pc {record.pc}")
    return ", ".join(parts)


def code_location(record: SanitizerRecord) -> str | None:
    """`file:line` of the kernel code that did it: the source frame, else the printed one."""
    frames = record.frames or next((event.frames for event in record.events if event.frames), ())
    frame = source_frame(frames)
    if frame is not None:
        return f"{frame.file}:{frame.line}"
    if record.code_file:
        return f"{record.code_file}:{record.code_line}"
    return None


def event_fields(record: SanitizerRecord) -> dict[str, Any]:
    """The fields a log event needs, for `scan` and the agent: reports carry no time."""
    code_file, _, code_line = (code_location(record) or "").rpartition(":")
    return {
        "timestamp": None,
        "level": record.level,
        "kind": record.kind,
        "kernel": record.kernel,
        "device": record.device,
        "message": one_line(record),
        "source": record.source,
        "line": record.line,
        "code_file": code_file or None,
        "code_line": int(code_line) if code_line.isdigit() else None,
    }
