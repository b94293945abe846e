"""msSanitizer's text reports read into records: one per error, warning, leak or summary line.

A report is what `mssanitizer --tool=memcheck|racecheck|initcheck|synccheck <app>` prints on
stdout (or writes with --log-file, or into mindstudio_sanitizer_log/mssanitizer_*.log). Every
report line starts with `======`; a record starts with `====== ERROR: `, `====== WARNING: ` or
`====== SUMMARY: ` and goes on with `======    <detail>` lines (where, which block, which code,
the call stack). The leak check is one header and a `Direct leak of` entry per allocation, each
a record of its own here. Besides: the banner `=== Start detect for N kernels. ===` and the
register warning `[mssanitizer]Warning:Register ...` (one line each).

Lines that are not the tool's (the application's own prints) are skipped wherever they fall;
leading blanks (a pasted report) and CRLF are tolerated. A record that lacks the lines its kind
always has (no block, no code location) is kept, marked incomplete, and named as a problem: the
report was cut there. `event_fields` turns a record into the plain fields of a log event.

The line grammar is in `read_grammar`, the records (and the draft a record is built from) in
`read_records`, a record in one line or as a log event in `read_events`; this module is the
loop that assembles a report's records.
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.debug_tools.sanitizer.read_grammar import (
    BANNER,
    LEAK_ENTRY,
    RECORD_START,
    REGISTER_WARNING,
    REPORT_LINE,
    banner_record,
    classify,
    read_detail,
    register_record,
)
from npuwatch.debug_tools.sanitizer.read_records import (
    RecordDraft,
    SanitizerRecord,
    SanitizerReport,
)
from npuwatch.untrusted_files import read_file


def parse_sanitizer_text(text: str, source: str) -> SanitizerReport:
    """The records of a report's text; `source` names the file in records and problems."""
    records: list[SanitizerRecord] = []
    problems: list[str] = []
    draft: RecordDraft | None = None
    leak_header: int | None = None

    def close(ends_report: bool) -> None:
        nonlocal draft
        if draft is None:
            return
        lacking = draft.missing()
        if lacking:
            where = "the report ends inside it" if ends_report else "the next record starts"
            problems.append(
                f"{source}:{draft.fields['line']}: {draft.fields['kind']} record without "
                f"{lacking} ({where}); kept as incomplete"
            )
        records.append(draft.build(truncated=lacking is not None))
        draft = None

    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        banner = BANNER.match(line)
        start = RECORD_START.match(line) if banner is None else None
        register = REGISTER_WARNING.match(line) if start is None and banner is None else None
        if banner or register:
            close(ends_report=False)
            leak_header = None
            lines = ((number, line),)
            if banner is not None:
                records.append(banner_record(banner, source, lines))
            elif register is not None:
                records.append(register_record(register, source, lines))
            continue
        if start is not None:
            close(ends_report=False)
            level, message = start[1], start[2]
            if message.startswith("LeakCheck"):
                # The header only opens the list: each `Direct leak` entry is a record.
                leak_header = number
                continue
            leak_header = None
            draft = RecordDraft(source, number, message, level, "other")
            classify(draft, message)
            draft.lines.append((number, line))
            continue
        if not REPORT_LINE.match(line):
            continue  # the application's own output, between or inside records
        detail = REPORT_LINE.sub("", line).strip()
        if not detail:
            continue
        leak = LEAK_ENTRY.match(detail)
        if leak is not None:
            close(ends_report=False)
            draft = RecordDraft(source, number, detail, "ERROR", "memory_leak")
            draft.fields["size_bytes"] = int(leak[1])
            if leak_header is None:
                problems.append(f"{source}:{number}: leak entry without a LeakCheck header")
        if draft is None:
            problems.append(f"{source}:{number}: report line outside any record: {detail[:80]}")
            continue
        draft.lines.append((number, line))
        if leak is None and not read_detail(draft, detail):
            problems.append(f"{source}:{number}: unrecognised line in a record: {detail[:80]}")
    close(ends_report=True)
    if leak_header is not None:
        problems.append(f"{source}:{leak_header}: LeakCheck header without any leak entry")
    return SanitizerReport(source=source, records=records, problems=problems)


REPORT_MARKERS = (
    b"====== ERROR: ",
    b"====== WARNING: ",
    b"====== SUMMARY: ",
    b" Start detect for ",
    b"[mssanitizer]",
)
"""Bytes of which one at least is in every msSanitizer report."""


def looks_like_report(data: bytes) -> bool:
    return any(marker in data for marker in REPORT_MARKERS)


def is_report_alone(data: bytes) -> bool:
    """Whether every line of `data` is msSanitizer's own (`======…`, `[mssanitizer] …`): a
    file with any other line is also a log (the tool prints its reports into the job's own
    output), whose lines must be read as such."""
    for line in data.splitlines():
        line = line.strip()
        if line and not line.startswith((b"=====", b"[mssanitizer]")):
            return False
    return True


def read_sanitizer_report(path: Path, name: str | None = None) -> SanitizerReport:
    """The report in the file at `path` (named `name` in records and problems, default the
    path); a file that cannot be read is an empty report with one problem."""
    source = name or str(path)
    try:
        data = read_file(path)
    except OSError as failure:
        return SanitizerReport(source, problems=[f"{source}:0: cannot read: {failure.strerror}"])
    return parse_sanitizer_text(data.decode("utf-8", errors="replace"), source)


_SNIFF_BYTES = 4096
"""A report's first marker (`[mssanitizer]`, `====== ERROR: `) is within its first lines."""


def starts_like_report(path: Path) -> bool:
    """Whether the file begins like an msSanitizer report (its first markers)."""
    try:
        return looks_like_report(read_file(path, limit=_SNIFF_BYTES))
    except OSError:  # a FIFO, a link, a file gone: no report
        return False


def is_report_file(path: Path) -> bool:
    """Whether `path` is a report the agent imports: a `.log` file that begins like one (such
    as mindstudio_sanitizer_log/mssanitizer_*.log)."""
    return path.name.endswith(".log") and starts_like_report(path)
