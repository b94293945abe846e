"""A scan's work, cut into units that can be read apart: one unit a host.

Everything a scan keeps across files belongs to one host: a process is a pid on a host, the
rules' dedupe windows and thresholds count within a host (as each host's agent counts), and
the collective extractor keeps its blocks by host and pid. So the hosts of a collection are read
apart — one after another, on several processes (`workers`), or on the hosts themselves
(`npuwatch summarize`, then `scan --summaries`) — and their parts are merged (`merge`) into
the same result.

The files of a unit are read in path order, then the debugging tools' reports under it; the
units come in the order of their hosts (the collection's natural order: `worker-2` before
`worker-10`), the files of no host's folder first. A host is not split further: its processes'
files share dedupe windows and blocks, and one host's tree is a few hundred milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.collector.files import list_log_files
from npuwatch.collector.finished_outputs import Output
from npuwatch.scan.debug_reports import report_alone, reports_in
from npuwatch.scan.hosts import HostOnCollection, collection_base, collection_hosts, host_of
from npuwatch.tree_walk import NO_LINKS, LinkPolicy


@dataclass
class ScanUnit:
    """One host's files (or the files of no host's folder): read by one reader, in order."""

    host: str | None
    files: list[Path] = field(default_factory=list)
    reports: list[Output] = field(default_factory=list)
    reports_alone: set[Path] = field(default_factory=set)
    """Reports that are nothing but the tool's lines: not also read as logs."""

    @property
    def file_count(self) -> int:
        return len(self.files)


@dataclass
class ScanPlan:
    """The tree named, what it holds, and its units in the order their parts are merged."""

    root: Path
    collection: bool
    hosts: list[str]
    units: list[ScanUnit]
    problems: list[str] = field(default_factory=list)
    """What the walk could not list (said before anything read)."""

    @property
    def file_count(self) -> int:
        return sum(unit.file_count for unit in self.units)


def plan_scan(
    root: Path, host: str | None = None, links: LinkPolicy = NO_LINKS, one_host: bool = False
) -> ScanPlan:
    """The units of a scan of `root` (a folder or a file). `host` names the host of a single
    tree; a collection names its hosts by their folders, and giving `host` for one raises
    HostOnCollection. With `one_host`, `root` is `host`'s tree whatever its folders are named
    (a host summarising its own logs)."""
    hosts = collection_hosts(root) if root.is_dir() and not one_host else None
    if hosts is not None and host is not None:
        raise HostOnCollection(root)
    known = frozenset(hosts or ())
    base = collection_base(root) if known else root
    problems: list[str] = []
    if root.is_dir():
        listing = list_log_files(root, links)
        files = listing.files
        problems.extend(listing.problems)
    else:
        files = [root]
    reports = reports_in(root)
    alone = {output.path for output in reports if report_alone(output)}

    def host_at(path: Path) -> str | None:
        return host_of(base, path, known) if known else host

    order = [None, *hosts] if hosts is not None else [host]
    units = {name: ScanUnit(name) for name in order}
    for path in files:
        if path not in alone:
            units[host_at(path)].files.append(path)
    for output in reports:
        unit = units[host_at(output.path)]
        unit.reports.append(output)
        if output.path in alone:
            unit.reports_alone.add(output.path)
    return ScanPlan(
        root=root,
        collection=hosts is not None,
        hosts=hosts if hosts is not None else [host] if host is not None else [],
        units=[unit for unit in units.values() if unit.files or unit.reports],
        problems=problems,
    )
