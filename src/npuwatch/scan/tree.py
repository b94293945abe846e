"""Walking a log tree: every log file parsed, every record folded into a scan result; the
debugging tools' reports found in it folded in beside them (`debug_reports`).

A folder of host folders is a collection (see `hosts`): each file's records carry the name
of the host folder it is under.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from npuwatch.parsers.timestamps import LocalClock
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.aggregate import DEFAULT_CONTEXT_LINES, ScanResult
from npuwatch.scan.host_part import HostPart, read_unit
from npuwatch.scan.merge import merge_parts
from npuwatch.scan.summary import HostSummary
from npuwatch.scan.units import plan_scan
from npuwatch.scan.workers import read_units
from npuwatch.tree_walk import NO_LINKS, LinkPolicy

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
    jobs: int = 1,
) -> ScanResult:
    """Parse every log file under `root` (or `root` itself when it is a file), and match the
    records against the rules of `engine` when one is given. Links under `root` are followed
    only as `links` says (tree_walk); `root` itself is the operator's to name.

    `host` names the host of a single tree; a collection names its hosts by their folders,
    and giving `host` for one raises HostOnCollection. With `jobs` above 1 the hosts of a
    collection are read on that many processes (`workers`): the result is the same.
    """
    plan = plan_scan(root, host, links)
    total = plan.file_count
    done = _Progress(total, progress)
    if jobs > 1 and len(plan.units) > 1:
        parts = read_units(plan, clock, context_lines, engine, jobs, done.unit)
    else:
        parts = [
            read_unit(unit, clock, root, context_lines, engine, done.file) for unit in plan.units
        ]
    return merge_parts(
        str(root),
        plan.hosts,
        plan.collection,
        parts,
        plan.problems,
        rules_applied=engine is not None,
    )


def summarize_tree(
    root: Path,
    host: str,
    clock: LocalClock,
    context_lines: int = DEFAULT_CONTEXT_LINES,
    progress: ProgressCallback | None = None,
    engine: RuleEngine | None = None,
    links: LinkPolicy = NO_LINKS,
) -> HostSummary:
    """One host's stage of a two-stage scan (`npuwatch summarize`): `root` is `host`'s tree,
    whatever its folders are named (a host's folders of its own naming would look like a
    collection to scan), read as scan reads one host, into its summary."""
    plan = plan_scan(root, host, links, one_host=True)
    done = _Progress(plan.file_count, progress)
    # One unit at most: every file of a single tree is the named host's.
    parts = [read_unit(unit, clock, root, context_lines, engine, done.file) for unit in plan.units]
    part = parts[0] if parts else HostPart(host, ScanResult(str(root)))
    part.rules_applied = engine is not None
    part.listing_problems = plan.problems
    return HostSummary(str(root), host, part, context_lines)


class _Progress:
    """Files and bytes done, told to the caller's callback."""

    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self._total = total
        self._callback = callback
        self._files = 0
        self._bytes = 0

    def file(self, read: int) -> None:
        self.unit(1, read)

    def unit(self, files: int, read: int) -> None:
        self._files += files
        self._bytes += read
        if self._callback is not None:
            self._callback(self._files, self._total, self._bytes)
