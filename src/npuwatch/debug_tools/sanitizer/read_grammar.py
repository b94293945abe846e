"""The grammar of a msSanitizer report line: what each kind of line says about its record.

A record's first line (`====== ERROR: illegal read of size 4`) gives its level and, by its
message, its kind (KINDS_BY_MESSAGE, race hazards, unpaired/redundant flags); the `======`
detail lines after it say where (`at 0x… on GM`), which block and device, which code
(`code in file:line (serialNo:n)` or a pc), the call stack (`#0 file:line:col`), the pipes and
the two events of a race. The banner and the register warning are records of one line. These
patterns change with the tool's versions, so they are kept together here, apart from the loop
that assembles records (`read`) and from the records themselves (`read_records`).
"""

from __future__ import annotations

import re
from typing import Any

from npuwatch.bounded_numbers import fitting_int
from npuwatch.debug_tools.sanitizer.read_records import Frame, RecordDraft, SanitizerRecord

KINDS_BY_MESSAGE = (
    (re.compile(r"illegal read of size (\d+)"), "illegal_read"),
    (re.compile(r"illegal write of size (\d+)"), "illegal_write"),
    (re.compile(r"misaligned access of size (\d+)"), "misaligned_access"),
    (re.compile(r"uninitialized read of size (\d+)"), "uninitialized_read"),
    (re.compile(r"out of bounds of size (\d+)"), "out_of_bounds"),
    (re.compile(r"illegal free\(\)"), "illegal_free"),
    (re.compile(r"Unused memory of (\d+) ?byte\(s\)"), "unused_memory"),
    (re.compile(r"internal errors \(serialNo:(\d+)\)"), "internal_error"),
    (re.compile(r"(\d+) ?byte\(s\) leaked in (\d+) allocation"), "leak_summary"),
    (re.compile(r"(\d+) ?byte\(s\) unused memory in (\d+) allocation"), "unused_summary"),
)
"""A record's message → its kind; the first group is a byte count where there is one."""
_Lines = tuple[tuple[int, str], ...]

# The lines the assembly loop (sanitizer) tells apart: every report line, a record's first
# line, the two one-line records, and a leak entry (a record of its own).
REPORT_LINE = re.compile(r"^\s*======(?!=)")
RECORD_START = re.compile(r"^\s*====== (ERROR|WARNING|SUMMARY): ?(.*?)\s*$")
BANNER = re.compile(r"^\s*=+ Start detect for (\d+) kernels?\.? =+\s*$")
REGISTER_WARNING = re.compile(
    r"^\s*\[mssanitizer\]\s*Warning:\s*(?P<message>Register (?P<register>\S+) was not reset to "
    r"default in block (?P<block>\S+) on kernel (?P<kernel>\S+?)\.?\s+Expected default value "
    r"is \((?P<expected>[^)]*)\), but current value is \((?P<current>[^)]*)\).*|.*)"
)
LEAK_ENTRY = re.compile(r"^Direct leak of (\d+) ?byte\(s\)$")

# What the detail lines of a record say.
_RACE = re.compile(
    r"Potential (RAW|WAR|WAW) hazard detected at (\w+)(?: in (\S+?))?(?: on device (\d+))?:?$"
)
_SYNC = re.compile(r"(Unpaired|Redundant) (set_flag|wait_flag) instructions detected")
_AT = re.compile(
    r"^at (?P<address>(?:0x)?[0-9a-fA-F]+) on (?P<space>\w+)"
    r"(?: when (?P<access>reading|writing) data)?(?: in (?P<kernel>\S+))?"
    r"(?: by module (?P<module>-?\d+))?(?: allocated in (?P<alloc>.+))?$"
)
_BLOCK = re.compile(
    r"^(?:by thread \((?P<thread>\d+,\d+,\d+)\) )?"
    r"in block (?P<block>.+?) on device (?P<device>\d+)$"
)
_PC = re.compile(r"pc current (?P<pc>0x[0-9a-fA-F]+) \(serialNo:(?P<serial>\d+)\)")
_CODE = re.compile(r"^(?P<file>.+):(?P<line>\d+) \(serialNo:(?P<serial>\d+)\)$")
_FRAME = re.compile(r"^#(?P<index>\d+) (?P<file>.+?):(?P<line>\d+)(?::(?P<column>\d+))?$")
_PIPES = re.compile(r"^from (?P<src>\S+) to (?P<dst>\S+)(?: in (?P<kernel>\S+))?$")
_EVENT = re.compile(
    r"^(?P<pipe>\S+) (?P<access>Write|Read)(?: Thread \((?P<thread>\d+,\d+,\d+)\))? at "
    r"(?P<address>\S+) in block (?P<block>.+?) on device (?P<device>\d+)\s*(?:at (?P<where>.+))?$"
)


def classify(draft: RecordDraft, message: str) -> None:
    """The kind of a record (and what its first line says) from its message."""
    fields = draft.fields
    race = _RACE.match(message)
    if race is not None:
        fields["kind"] = f"{race[1].lower()}_hazard"
        fields["memory_space"], fields["kernel"] = race[2], race[3]
        fields["device"] = whole(race[4]) if race[4] else None
        return
    sync = _SYNC.match(message)
    if sync is not None:
        fields["kind"] = f"{sync[1].lower()}_{sync[2]}"
        return
    for pattern, kind in KINDS_BY_MESSAGE:
        found = pattern.match(message)
        if found is None:
            continue
        fields["kind"] = kind
        if kind == "internal_error":
            fields["serial_no"] = whole(found[1])
        elif found.groups():
            fields["size_bytes"] = whole(found[1])
        if kind.endswith("_summary"):
            fields["count"] = whole(found[2])
        if kind in {"illegal_read", "uninitialized_read"}:
            fields["access"] = "read"
        elif kind == "illegal_write":
            fields["access"] = "write"
        return


def read_detail(draft: RecordDraft, detail: str) -> bool:
    """Take what a `======    <detail>` line says into the draft; False when unrecognised."""
    fields = draft.fields
    frame = _FRAME.match(detail)
    if frame is not None:
        column = whole(frame["column"]) if frame["column"] else None
        # A frame index or line past 64 bits is read as 0: the frame's text stays in the report.
        index, line = whole(frame["index"]) or 0, whole(frame["line"]) or 0
        draft.frame(Frame(index, frame["file"], line, column))
        return True
    at = _AT.match(detail)
    if at is not None:
        fields["address"], fields["memory_space"] = at["address"], at["space"]
        if at["access"]:
            fields["access"] = "write" if at["access"] == "writing" else "read"
        if at["kernel"]:
            fields["kernel"] = at["kernel"]
        if at["module"]:
            fields["module_id"] = whole(at["module"])
        return at["alloc"] is None or _code(fields, at["alloc"])
    block = _BLOCK.match(detail)
    if block is not None:
        fields["block"], fields["device"] = block["block"], whole(block["device"])
        fields["thread"] = f"({block['thread']})" if block["thread"] else None
        return True
    for prefix in ("code in ", "allocated in "):
        if detail.startswith(prefix):
            where = detail[len(prefix) :]
            pc = _PC.fullmatch(where)
            if pc is None:
                return _code(fields, where)
            fields["pc"], fields["serial_no"] = pc["pc"], whole(pc["serial"])
            return True
    pipes = _PIPES.match(detail)
    if pipes is not None:
        fields["from_pipe"], fields["to_pipe"] = pipes["src"], pipes["dst"]
        fields["kernel"] = pipes["kernel"] or fields.get("kernel")
        return True
    event = _EVENT.match(detail)
    if event is not None:
        draft.events.append(_race_event(event))
        return True
    return False


def _code(fields: dict[str, Any], where: str) -> bool:
    """`file:line (serialNo:n)` into the code location of a record (or of a race event)."""
    code = _CODE.match(where.strip())
    if code is None:
        return False
    fields["code_file"], fields["code_line"] = code["file"], whole(code["line"])
    fields["serial_no"] = whole(code["serial"])
    return True


def _race_event(event: re.Match[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "pipe": event["pipe"],
        "access": event["access"].lower(),
        "address": event["address"],
        "block": event["block"],
        "device": whole(event["device"]),
        "thread": f"({event['thread']})" if event["thread"] else None,
        "pc": None,
        "serial_no": None,
        "code_file": None,
        "code_line": None,
        "frames": [],
    }
    where = (event["where"] or "").strip()
    pc = _PC.fullmatch(where)
    if pc is not None:
        fields["pc"], fields["serial_no"] = pc["pc"], whole(pc["serial"])
    elif where:
        _code(fields, where.removeprefix("code in "))
    return fields


def banner_record(banner: re.Match[str], source: str, lines: _Lines) -> SanitizerRecord:
    """The INFO record of a `Start detect for N kernels.` banner."""
    count = whole(banner[1])
    message = f"Start detect for {count} kernels."
    return SanitizerRecord(
        source, lines[0][0], "INFO", "detection_start", message, count=count, lines=lines
    )


def register_record(register: re.Match[str], source: str, lines: _Lines) -> SanitizerRecord:
    """The WARNING record of a `[mssanitizer]Warning:Register ...` line."""
    return SanitizerRecord(
        source,
        lines[0][0],
        "WARNING",
        "register_not_reset",
        register["message"].strip(),
        kernel=register["kernel"],
        block=register["block"],
        register=register["register"],
        expected_value=register["expected"],
        current_value=register["current"],
        lines=lines,
    )


def whole(text: str) -> int | None:
    """A number of the report (device, serial, line, size): None past 64 bits, as no field
    holds it (the report's text keeps it)."""
    return fitting_int(text)
