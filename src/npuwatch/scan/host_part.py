"""Reading one unit of a scan (one host's files) into its part of the result.

A part holds what the merge needs and nothing that only one host could finish: the host's
counts, processes, codes and first errors (a ScanResult of its own), the collective extractor's
output in the order it came (what the correlator is fed once every host's part is in), and the
rule events, each finished (its context complete: a unit's files are all read).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.collector.files import read_chunks, year_reference_us
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import Extracted
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.events import Event
from npuwatch.scan.aggregate import DEFAULT_CONTEXT_LINES, ScanAggregator, ScanResult
from npuwatch.scan.debug_reports import scan_report
from npuwatch.scan.units import ScanUnit
from npuwatch.untrusted_files import open_binary

FileDone = Callable[[int], None]
"""Called after each file with the bytes read of it."""


@dataclass
class HostPart:
    """One unit's part of a scan."""

    host: str | None
    result: ScanResult
    """Counts, processes, codes, first errors and problems of the unit's files alone."""
    extracted: list[Extracted] = field(default_factory=list)
    """The collective extractor's output while the files were read, in order."""
    closing: list[Extracted] = field(default_factory=list)
    """What the extractor said at the end of the unit (the blocks still open)."""
    events: list[Event] = field(default_factory=list)
    rules_applied: bool = False
    listing_problems: list[str] = field(default_factory=list)
    """What the walk of a host's own tree could not list (`npuwatch summarize`): said before
    anything read, as a scan says its walk's."""


def read_unit(
    unit: ScanUnit,
    clock: LocalClock,
    root: Path,
    context_lines: int = DEFAULT_CONTEXT_LINES,
    engine: RuleEngine | None = None,
    file_done: FileDone | None = None,
) -> HostPart:
    """Read the unit's files, then its reports. `engine`'s rules are run on a fresh state of
    their own (`RuleEngine.fresh`): what one host counts never reaches another's. `root` is the
    path the scan was given (a file named as the root is opened even where it is a link)."""
    aggregator = ScanAggregator(str(root), context_lines)
    own_engine = engine.fresh() if engine is not None else None
    part = HostPart(unit.host, aggregator.result, rules_applied=engine is not None)
    reader = _LogReader(aggregator, CollectiveExtractor(), own_engine, clock, part.extracted)
    for path in unit.files:
        read = reader.read(path, path == root, unit.host)
        if file_done is not None:
            file_done(read)
    for output in unit.reports:
        found = scan_report(output, aggregator, unit.host, own_engine)
        if not found and output.path in unit.reports_alone:
            # The markers alone (a banner, a clean run): nothing of the tool's to fold in, so
            # the file is read as the log it also is, and counted once.
            reader.read(output.path, output.path == root, unit.host)
    aggregator.finish()
    part.closing = reader.extractor.finish()
    if own_engine is not None:
        part.events = own_engine.flush()
    return part


class _LogReader:
    """Reads one log file into the aggregator, the collective extractor and the rules."""

    def __init__(
        self,
        aggregator: ScanAggregator,
        extractor: CollectiveExtractor,
        engine: RuleEngine | None,
        clock: LocalClock,
        extracted: list[Extracted],
    ) -> None:
        self._aggregator = aggregator
        self.extractor = extractor
        self._engine = engine
        self._clock = clock
        self._extracted = extracted

    def read(self, path: Path, named: bool, host: str | None) -> int:
        """The file's bytes read (0 when it could not be read, which is said as a problem)."""
        aggregator, engine = self._aggregator, self._engine
        extract, extracted = self.extractor.feed, self._extracted
        try:
            with open_binary(path, named=named) as handle:
                status = os.fstat(handle.fileno())
                size = status.st_size
                parser = StreamParser(
                    self._clock,
                    path=str(path),
                    host=host,
                    reference_us=year_reference_us(handle, status.st_mtime_ns // 1000),
                    batch_index=engine is not None,
                )
                aggregator.start_file(parser.source, size)
                stream = engine.stream(parser.source) if engine is not None else None
                offset = 0
                for chunk in read_chunks(handle):
                    records = parser.feed(chunk, offset)
                    if records:
                        extracted.extend(extract(records, aggregator.next_line))
                    aggregator.add_batch(records)
                    if engine is not None and stream is not None:
                        engine.process(records, stream, chunk, parser.last_batch)
                    offset += len(chunk)
            records = parser.flush()
            if records:
                extracted.extend(extract(records, aggregator.next_line))
            aggregator.add_batch(records)
            if engine is not None and stream is not None:
                engine.process(records, stream, hints=parser.last_batch)
                stream.close()
            return size
        except OSError as error:
            aggregator.add_problem(f"cannot read {path}: {error.strerror or error}")
            return 0
