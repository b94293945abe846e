"""The second stage of a scan whose hosts read their own logs: host summaries merged into the
report `scan` gives for the hosts' logs gathered in one folder, one sub-folder a host.

Each host ran `npuwatch summarize` on its own tree (its part: `host_part`, written as a host
summary: `summary`); here the parts are put in the order a collection's hosts take (their
names in natural order) and merged as a scan's own parts are (`merge`). The summaries are a
collection, even of one host; the root reported is the folder that holds the hosts' trees.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.hosts import natural_order
from npuwatch.scan.merge import merge_parts
from npuwatch.scan.summary import HostSummary, SummaryError, read_summary_text
from npuwatch.untrusted_files import read_file

SUMMARY_SUFFIX = ".json"
"""The files a folder of summaries is read for."""
LARGEST_SUMMARY = 1 << 30
"""A summary is kilobytes to megabytes; a file above this is not one (and is not read whole)."""


def summary_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and the `*.json` files directly in each folder named, in name order;
    SummaryError when a path is neither, or a folder holds none."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.name.endswith(SUMMARY_SUFFIX))
            if not inside:
                raise SummaryError(
                    f"{path} holds no host summary (*{SUMMARY_SUFFIX}): give the folder the "
                    "hosts' `npuwatch summarize -o` wrote into"
                )
            found.extend(inside)
        elif path.exists():
            found.append(path)
        else:
            raise SummaryError(f"cannot read {path}: no such file or folder")
    return found


def read_summaries(files: Iterable[Path]) -> list[HostSummary]:
    """Every summary, read; SummaryError naming the first file that is not one."""
    summaries = []
    for path in files:
        try:
            data = read_file(path, named=True, limit=LARGEST_SUMMARY + 1)
        except OSError as error:
            raise SummaryError(f"cannot read {path}: {error.strerror or error}") from None
        if len(data) > LARGEST_SUMMARY:
            raise SummaryError(f"{path} is larger than a host summary can be (1 GiB)")
        summaries.append(read_summary_text(data, str(path)))
    return summaries


def merge_summaries(summaries: list[HostSummary], files: list[Path] | None = None) -> ScanResult:
    """The report of the hosts summarised: each host once, all with rules or all without."""
    if not summaries:
        raise SummaryError("no host summary given")
    names = [str(path) for path in files] if files else [s.host or "-" for s in summaries]
    seen: dict[str | None, str] = {}
    for summary, name in zip(summaries, names, strict=True):
        if summary.host in seen:
            raise SummaryError(
                f"{seen[summary.host]} and {name} both summarise host {summary.host}: give "
                "each host once (summarize with --host where hostnames repeat)"
            )
        seen[summary.host] = name
    with_rules = {summary.part.rules_applied for summary in summaries}
    if len(with_rules) > 1:
        raise SummaryError(
            "some summaries were made with the rules and some without (--no-rules): "
            "summarize every host the same way"
        )
    ordered = sorted(summaries, key=lambda s: (s.host is not None, natural_order(s.host or "")))
    hosts = [s.host for s in ordered if s.host is not None]
    return merge_parts(
        _common_folder([s.root for s in ordered]),
        hosts,
        True,
        [s.part for s in ordered],
        [problem for s in ordered for problem in s.part.listing_problems],
        rules_applied=with_rules.pop(),
    )


def _common_folder(roots: list[str]) -> str:
    """The folder that holds every host's tree: where the hosts' logs would be gathered."""
    try:
        return os.path.commonpath([str(Path(root).parent) for root in roots])
    except ValueError:  # absolute beside relative paths: nothing in common to name
        return ""
