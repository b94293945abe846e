"""Walking a log tree: every log file parsed, every record folded into a scan result; the
debugging tools' reports found in it folded in beside them (`debug_reports`).

A folder of host folders is a collection (see `hosts`): each file's records carry the name
of the host folder it is under.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from npuwatch.collector.files import list_log_files, read_chunks, year_reference_us
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.aggregate import DEFAULT_CONTEXT_LINES, ScanAggregator, ScanResult
from npuwatch.scan.collectives import CollectiveScan
from npuwatch.scan.debug_reports import report_alone, reports_in, scan_report
from npuwatch.scan.hosts import (
    HostOnCollection,
    collection_base,
    collection_hosts,
    host_of,
)
from npuwatch.tree_walk import NO_LINKS, LinkPolicy
from npuwatch.untrusted_files import open_binary

ProgressCallback = Callable[[int, int, int], None]
"""Called after each file with (files done, files in all, bytes done)."""


def scan_tree(
    root: Path,
    clock: LocalClock,
    context_lines: int = DEFAULT_CONTEXT_LINES,
    host: str | None = None,
    progress: ProgressCallback | None = None,
    engine: RuleEngine | None = None,
    links: LinkPolicy = NO_LINKS,
) -> ScanResult:
    """Parse every log file under `root` (or `root` itself when it is a file), and match the
    records against the rules of `engine` when one is given. Links under `root` are followed
    only as `links` says (tree_walk); `root` itself is the operator's to name.

    `host` names the host of a single tree; a collection names its hosts by their folders,
    and giving `host` for one raises HostOnCollection.
    """
    hosts = collection_hosts(root) if root.is_dir() else None
    if hosts is not None and host is not None:
        raise HostOnCollection(root)
    aggregator = ScanAggregator(str(root), context_lines)
    result = aggregator.result
    result.collection = hosts is not None
    result.hosts = hosts if hosts is not None else [host] if host is not None else []
    known = frozenset(hosts or ())
    base = collection_base(root) if known else root
    if root.is_dir():
        listing = list_log_files(root, links)
        files = listing.files
        for problem in listing.problems:
            aggregator.add_problem(problem)
    else:
        files = [root]
    reports = reports_in(root)
    report_files = {output.path for output in reports if report_alone(output)}
    files = [path for path in files if path not in report_files]
    collectives = CollectiveScan()
    reader = _LogReader(aggregator, collectives, engine, clock)

    def host_at(path: Path) -> str | None:
        return host_of(base, path, known) if known else host

    done_bytes = 0
    for index, path in enumerate(files, 1):
        done_bytes += reader.read(path, path == root, host_at(path))
        if progress is not None:
            progress(index, len(files), done_bytes)
    for output in reports:
        found = scan_report(output, aggregator, host_at(output.path), engine)
        if not found and output.path in report_files:
            # The markers alone (a banner, a clean run): nothing of the tool's to fold in, so
            # the file is read as the log it also is, and counted once.
            reader.read(output.path, output.path == root, host_at(output.path))
    result = aggregator.finish()
    result.incidents = collectives.incidents()
    if engine is not None:
        result.events = engine.flush()
        result.rules_applied = True
    return result


class _LogReader:
    """Reads one log file into the aggregator, the cross-device part and the rules."""

    def __init__(
        self,
        aggregator: ScanAggregator,
        collectives: CollectiveScan,
        engine: RuleEngine | None,
        clock: LocalClock,
    ) -> None:
        self._aggregator = aggregator
        self._collectives = collectives
        self._engine = engine
        self._clock = clock

    def read(self, path: Path, named: bool, host: str | None) -> int:
        """The file's bytes read (0 when it could not be read, which is said as a problem)."""
        aggregator, collectives, engine = self._aggregator, self._collectives, self._engine
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
                    collectives.add_batch(records, aggregator.next_line)
                    aggregator.add_batch(records)
                    if engine is not None and stream is not None:
                        engine.process(records, stream, chunk, parser.last_batch)
                    offset += len(chunk)
            records = parser.flush()
            collectives.add_batch(records, aggregator.next_line)
            aggregator.add_batch(records)
            if engine is not None and stream is not None:
                engine.process(records, stream, hints=parser.last_batch)
                stream.close()
            return size
        except OSError as error:
            aggregator.add_problem(f"cannot read {path}: {error.strerror or error}")
            return 0
