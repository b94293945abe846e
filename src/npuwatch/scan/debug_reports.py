"""The debugging tools' reports in a scanned tree: msSanitizer reports and msaicerr folders.

People keep these beside the logs of the job they checked (`mindstudio_sanitizer_log/`, the
`info_<time>` folders msaicerr writes), and the question `scan` answers is the same: what went
wrong, and where. Their findings become the records the agent journals for them
(debug_tools/findings.py), logged by `SANITIZER`, at the time the report was written, so
they are counted, listed as first errors and matched by the rules (the `debug-tools` pack)
next to the CANN logs of the same time. A report's lines are not also read as log lines; a
file that holds other lines too (the tool printed into the job's output) is read as a log as
well, so that none of its lines is lost.
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.collector.debug_outputs import find_debug_outputs
from npuwatch.collector.finished_outputs import Output, signature_of
from npuwatch.debug_tools import MSAICERR, SANITIZER, digest_output
from npuwatch.debug_tools.sanitizer.read import is_report_alone, starts_like_report
from npuwatch.parsers.debug_entries import DEBUG_KIND
from npuwatch.records import SourceInfo
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.aggregate import ScanAggregator
from npuwatch.untrusted_files import read_file

SCANNED_KINDS = (SANITIZER.kind, MSAICERR.kind)
"""The outputs `scan` reads: the reports of kernel errors. Precision and monitor results are
tables of a training run, for `npuwatch precision|monitor summary`."""


def reports_in(root: Path) -> list[Output]:
    """The msSanitizer reports and msaicerr folders at or under `root`, in path order."""
    if root.is_dir():
        return find_debug_outputs(root, SCANNED_KINDS)
    if starts_like_report(root):
        return [Output(SANITIZER.kind, root)]
    return []


_LOOKED_AT_BYTES = 16 << 20
"""How much of a report is looked at for lines of another kind (reports are small; a job's
output that holds one has its own lines from the start)."""


def report_alone(output: Output) -> bool:
    """Whether the output holds nothing but the tool's own lines (an msaicerr folder, a report
    file of msSanitizer's lines alone): its lines are then not also read as log lines."""
    if output.kind != SANITIZER.kind:
        return True
    try:
        return is_report_alone(read_file(output.path, limit=_LOOKED_AT_BYTES))
    except OSError:
        return True  # the report's own read says why


def scan_report(
    output: Output,
    aggregator: ScanAggregator,
    host: str | None,
    engine: RuleEngine | None,
) -> bool:
    """Fold the findings of one report into the scan (and its rule events into `engine`'s);
    False when it holds none, nor a problem: the markers alone."""
    # Imported here: most trees hold no report, and every scan would pay for the summaries.
    from npuwatch.debug_tools.findings import entry_records  # noqa: PLC0415

    signature = signature_of(output.path)
    if signature is None:
        aggregator.add_problem(f"cannot read {output.path}: it vanished while being scanned")
        return True
    try:
        digest = digest_output(output.kind, output.path)
    except Exception as error:  # a report the parser could not make sense of: say so, go on
        aggregator.add_problem(f"cannot read the {output.kind} output {output.path}: {error}")
        return True
    for problem in digest.problems:
        aggregator.add_problem(f"{output.path.parent}/{problem}")
    if not digest.entries and not digest.problems:
        return False  # the markers alone: a log that quotes them, read as a log
    entries = sorted(digest.entries, key=lambda entry: entry.get("line") or 0)
    records = entry_records(entries, signature.newest_ns // 1000, 0)
    source = SourceInfo(path=str(output.path), host=host, kind=DEBUG_KIND)
    aggregator.start_file(source, signature.bytes)
    for entry, record in zip(entries, records, strict=True):
        record.source = source
        # The report's own words, not the journal's JSON: this record is printed, not kept.
        record.original = record.message or record.original
        line = entry.get("line")
        if isinstance(line, int):  # a report's record starts on a known line
            aggregator.skip_lines(line - aggregator.next_line)
        aggregator.add_batch([record])
    if engine is not None:
        stream = engine.stream(source)
        engine.process(records, stream)
        stream.close()
    return True
