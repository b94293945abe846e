"""`scan --jobs 2` and the two-stage scan (`summarize` on each host, `scan --summaries`) give
exactly the report of `scan` on every fixture collection and every real case.

The one-process scan is the reference: its JSON document (incidents, counts, processes, first
errors with their lines, rule events with their context, findings and verdict) and its text
report. The worker processes send their parts back as host summaries, so both paths go through
the summary's JSON; the two-stage path reads each host's tree on its own, as a host does.
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.central import merge_summaries
from npuwatch.scan.hosts import collection_base, collection_hosts
from npuwatch.scan.summary import HostSummary, read_summary_text, summary_text
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree, summarize_tree
from npuwatch.scan.units import plan_scan
from npuwatch.terminal import Palette
from tests.conftest import FIXTURES, REAL_LOGS, utc_clock

SINGLE_HOST = "node-7"
"""The host named for a single tree (scan --host, summarize --host)."""


def collections() -> list[Any]:
    folders = [
        folder
        for group in ("collective", "init-link", "trees")
        for folder in sorted((FIXTURES / group).iterdir())
        if folder.is_dir()
    ]
    found = [pytest.param(folder, id=f"{folder.parent.name}/{folder.name}") for folder in folders]
    real = REAL_LOGS / "hccl"
    if real.is_dir():
        found += [
            pytest.param(folder, id=f"real/{folder.name}", marks=pytest.mark.realdata)
            for folder in sorted(real.iterdir())
            if folder.is_dir()
        ]
    else:
        found.append(
            pytest.param(
                None,
                id="real",
                marks=pytest.mark.skip(reason="../shared/real-logs/hccl is not present"),
            )
        )
    return found


@cache
def engine() -> RuleEngine:
    return RuleEngine(load_rules(default_locations()))


def host_of_tree(root: Path) -> str | None:
    """The host named for a single tree; None for a collection (its folders name its hosts)."""
    return None if collection_hosts(root) is not None else SINGLE_HOST


def reports(result: ScanResult) -> tuple[dict[str, Any], str]:
    text = render_scan(result, ZoneInfo("UTC"), Palette(False))
    return json.loads(json.dumps(result.to_dict())), text


def summarized(host_root: Path, host: str) -> HostSummary:
    """What `npuwatch summarize HOST_ROOT --host HOST` writes, read back."""
    summary = summarize_tree(host_root, host, utc_clock(), engine=engine())
    return read_summary_text(summary_text(summary), str(host_root))


@pytest.mark.parametrize("given", collections())
def test_two_workers_and_two_stages_give_the_report_of_one_process(
    given: Path, tmp_path: Path
) -> None:
    root = given
    host = host_of_tree(given)
    one = scan_tree(root, utc_clock(), host=host, engine=engine())
    expected, expected_text = reports(one)
    assert expected["records"] > 0
    plan = plan_scan(root, host)

    two = scan_tree(root, utc_clock(), host=host, engine=engine(), jobs=2)
    assert reports(two) == (expected, expected_text)

    if not plan.collection:
        # One host's tree: the two stages' report is the one of a collection of that host.
        root = tmp_path / "gathered"
        shutil.copytree(given, root / SINGLE_HOST, symlinks=True)
        expected, expected_text = reports(scan_tree(root, utc_clock(), engine=engine()))
        plan = plan_scan(root)
    # Files beside the host folders belong to no host: no host would summarise them.
    assert all(unit.host is not None for unit in plan.units), "a file of no host"
    base = collection_base(root)
    hosts = collection_hosts(root) or []
    summaries = [summarized(base / name, name) for name in reversed(hosts)]
    central = merge_summaries(summaries)
    # The root a central stage names is the folder that holds the hosts' trees (a scan names
    # the folder it was given, which may wrap that one); the report's places are relative to it.
    assert central.root == str(base)
    central.root = str(root)
    assert reports(central) == (expected, expected_text)
