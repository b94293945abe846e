"""The parts of a scan (one a host: `host_part`) merged into its result.

Parts are merged in the order of their units (`units`), and no two parts share a process (a
process is a pid on a host), so merging is adding: counts summed, counters updated in order
(their ties keep the order of first appearance, as one reader's would), processes and first
errors put side by side, the time span widened. The correlator is fed every part's extractor
output, then every part's closing output, in that order: the order one reader feeds it in.
Rule events are ordered by time across hosts, earlier parts first on a tie.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from npuwatch.correlation.correlator import Correlator
from npuwatch.rules.engine import events_by_time
from npuwatch.scan.aggregate import CodeStats, ScanResult
from npuwatch.scan.host_part import HostPart


def merge_parts(
    root: str,
    hosts: list[str],
    collection: bool,
    parts: Iterable[HostPart],
    problems: Iterable[str] = (),
    rules_applied: bool = False,
) -> ScanResult:
    """The scan's result from its parts; `problems` (the walk's) are said first."""
    merged = ScanResult(root=root, hosts=list(hosts), collection=collection)
    merged.problems.extend(problems)
    merged.rules_applied = rules_applied
    parts = list(parts)
    for part in parts:
        _add(merged, part.result)
    correlator = Correlator()
    correlator.add_all(chain.from_iterable(part.extracted for part in parts))
    correlator.add_all(chain.from_iterable(part.closing for part in parts))
    merged.incidents = correlator.incidents()
    if rules_applied:
        merged.events = events_by_time(list(chain.from_iterable(part.events for part in parts)))
    return merged


def _add(merged: ScanResult, part: ScanResult) -> None:
    merged.files += part.files
    merged.bytes += part.bytes
    merged.lines += part.lines
    merged.records += part.records
    if part.first_us is not None and (merged.first_us is None or part.first_us < merged.first_us):
        merged.first_us = part.first_us
    if part.last_us is not None and (merged.last_us is None or part.last_us > merged.last_us):
        merged.last_us = part.last_us
    merged.levels.update(part.levels)
    merged.modules.update(part.modules)
    merged.kinds.update(part.kinds)
    merged.flags.update(part.flags)
    for code, stats in part.codes.items():
        _add_code(merged.codes, code, stats)
    merged.processes.update(part.processes)
    merged.devices |= part.devices
    merged.first_errors.extend(part.first_errors)
    merged.problems.extend(part.problems)


def _add_code(codes: dict[str, CodeStats], code: str, part: CodeStats) -> None:
    stats = codes.get(code)
    if stats is None:
        codes[code] = stats = CodeStats(code)
    stats.count += part.count
    if part.first_us is not None and (stats.first_us is None or part.first_us < stats.first_us):
        stats.first_us = part.first_us
    if part.last_us is not None and (stats.last_us is None or part.last_us > stats.last_us):
        stats.last_us = part.last_us
    for key, name in part.processes.items():
        stats.processes.setdefault(key, name)
    stats.devices |= part.devices
