"""The debugging tools' findings shipped by the real agent to the real OpenSearch node: one
output of each kind (a precision compare, a monitor folder, an msSanitizer report, an msaicerr
folder) lands in logs-ascend.debug-<namespace>, one document per finding, found by its module
(`log.logger`), with the rule events of the findings in the events stream; a restarted agent
ships nothing twice.

The expected counts are worked out here from the same digests the agent journals
(npuwatch.debug_tools.digest_output on the outputs collector.debug_outputs finds), so that
the test checks the path from the folder to the engine, not the parsers' counts again.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opensearchpy.exceptions import TransportError

from npuwatch.collector.debug_outputs import find_debug_outputs
from npuwatch.debug_tools import digest_output
from npuwatch.parsers.debug_entries import DEBUG_KIND, LOGGERS
from npuwatch.sinks.search.engine import SearchEngine, status_of
from npuwatch.sinks.search.streams import events_stream, record_stream
from tests.conftest import FIXTURES, REPO
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import install_template, journal_counts

pytestmark = pytest.mark.integration

DEBUG = FIXTURES / "debug_tools"
NAMESPACE = "debugtools"
DEBUG_STREAM = record_stream(DEBUG_KIND, NAMESPACE)
EVENTS_STREAM = events_stream(NAMESPACE)
SHIPPED_WITHIN = 90.0
"""Seconds from the agent's start to every finding and event in the engine (expected: a few:
the outputs are settled already, and each is read by a child interpreter)."""
EVENT_RULES = {
    "debug.precision-first-failure",
    "debug.training-nan",
    "debug.sanitizer-illegal-access",
    "debug.msaicerr-aicore-error",
}
"""Rules that must have an event among those of the four outputs (a subset: the test checks
that every journaled event is shipped, not what the rule pack says of each finding)."""


def copy_outputs(debug: Path) -> None:
    """One output of each kind, as the tools leave them in the folder the agent watches."""
    (debug / "precision").mkdir(parents=True)
    shutil.copy2(
        DEBUG / "precision" / "first_mismatch" / "compare_result_rank0_20250302110000.json",
        debug / "precision",
    )
    shutil.copytree(DEBUG / "monitor" / "two_ranks", debug / "monitor_output")
    shutil.copy2(DEBUG / "sanitizer" / "memcheck.log", debug / "memcheck.log")
    shutil.copytree(DEBUG / "sanitizer" / "msaicerr_out", debug / "msaicerr_out")


@dataclass(frozen=True)
class Expected:
    """What the outputs in a folder give, by the digests the agent journals."""

    by_output: dict[str, int]
    """Entries of each output, by its path."""
    by_logger: Counter[str]
    kinds: frozenset[str]

    @property
    def total(self) -> int:
        return sum(self.by_output.values())


def expected_in(debug: Path) -> Expected:
    by_output: dict[str, int] = {}
    by_logger: Counter[str] = Counter()
    kinds = set()
    for output in find_debug_outputs(debug):
        entries = digest_output(output.kind, output.path).entries
        by_output[str(output.path)] = len(entries)
        by_logger.update(str(entry["logger"]) for entry in entries)
        kinds.add(output.kind)
    return Expected(by_output, by_logger, frozenset(kinds))


def write_config(work: Path, node: RunningNode) -> Path:
    config = work / "npuwatch.toml"
    config.write_text(
        f"""
[agent]
state_directory = "{work / "state"}"
host_name = "node-1"
timezone = "UTC"

[sources]
roots = ["{work / "logs"}"]

[devices]
enabled = false

[debug_tools]
paths = ["{work / "debug"}"]
settle = "500ms"
scan_interval = "500ms"

[sinks.elasticsearch]
enabled = true
flavour = "opensearch"
hosts = ["{node.url}"]
namespace = "{NAMESPACE}"

[sinks.prometheus]
enabled = false
""",
        encoding="utf-8",
    )
    return config


def start_agent(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "npuwatch", "agent", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )


def stop_agent(agent: subprocess.Popen[bytes]) -> int:
    agent.send_signal(signal.SIGTERM)
    return agent.wait(timeout=60)


def counted(engine: SearchEngine, index: str, query: dict[str, Any] | None = None) -> int:
    """The count, waiting out the 503 of a backing index whose shard has not started yet."""
    for _ in range(50):
        try:
            return engine.count(index, query)
        except TransportError as error:
            if status_of(error) != 503:
                raise
            time.sleep(0.2)
    raise AssertionError(f"{index} kept answering 503 for 10 s")


def debug_events(engine: SearchEngine) -> int:
    return counted(engine, EVENTS_STREAM, {"term": {"ascend.kind": DEBUG_KIND}})


def wait_until(done: Callable[[], bool], within: float) -> float:
    """Seconds until `done()` held; fails after `within`."""
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > within:
            return -1.0
        time.sleep(0.5)
    return time.monotonic() - started


def shipped_everything(engine: SearchEngine, journal: Path, entries: int) -> Callable[[], bool]:
    """Every finding of the outputs, and every event journaled so far, is in the engine."""

    def check() -> bool:
        if counted(engine, DEBUG_STREAM) != entries:
            return False
        _, events = journal_counts(journal) if journal.exists() else (0, 0)
        return events > 0 and debug_events(engine) == events

    return check


def document_ids(engine: SearchEngine, index: str) -> list[str]:
    hits = engine.search(index, {"size": 1000, "_source": False, "query": {"match_all": {}}})
    return sorted(str(hit["_id"]) for hit in hits)


def diagnostics(log: Path) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else "(no log)"
    return "--- the agent's log ---\n" + "\n".join(text.splitlines()[-30:])


def test_the_findings_of_each_debugging_tool_land_once_in_the_debug_stream(
    engine: SearchEngine, node: RunningNode, tmp_path: Path
) -> None:
    debug = tmp_path / "debug"
    copy_outputs(debug)
    (tmp_path / "logs").mkdir()
    expected = expected_in(debug)
    assert expected.kinds == {"precision", "monitor", "sanitizer", "msaicerr"}
    assert all(count > 0 for count in expected.by_output.values()), expected.by_output
    install_template(engine, NAMESPACE)
    config, log = write_config(tmp_path, node), tmp_path / "agent.log"
    journal = tmp_path / "state" / "journal"

    agent = start_agent(config, log)
    try:
        took = wait_until(shipped_everything(engine, journal, expected.total), SHIPPED_WITHIN)
    finally:
        status = stop_agent(agent)
    assert took >= 0, (
        f"{counted(engine, DEBUG_STREAM)} of {expected.total} findings and "
        f"{debug_events(engine)} of {journal_counts(journal)[1]} events shipped after "
        f"{SHIPPED_WITHIN:.0f} s\n{diagnostics(log)}"
    )
    print(f"{expected.total} findings and their events shipped {took:.1f} s after the start")
    assert status == 0, diagnostics(log)

    # Exactly the digests' entries, each output's own under its path, each module's found by it.
    assert counted(engine, DEBUG_STREAM) == expected.total
    for path, count in expected.by_output.items():
        assert counted(engine, DEBUG_STREAM, {"term": {"log.file.path": path}}) == count, path
    for logger in LOGGERS:
        found = counted(engine, DEBUG_STREAM, {"term": {"log.logger": logger}})
        assert found == expected.by_logger[logger], logger
    assert expected.by_logger["MONITOR"] == 7
    nan_rank_1 = {
        "bool": {
            "filter": [
                {"term": {"log.logger": "MONITOR"}},
                {"term": {"log.level": "ERROR"}},
                {"term": {"ascend.rank": 1}},
            ]
        }
    }
    assert counted(engine, DEBUG_STREAM, nan_rank_1) == 3  # rank 1's NaN at step 37
    # No finding strays into the host-side or device streams.
    assert counted(engine, f"logs-ascend.*-{NAMESPACE}", {"term": {"ascend.kind": DEBUG_KIND}}) == (
        expected.total + debug_events(engine)
    )

    # The rule events of the findings, beside them in the events stream, one per journaled event.
    _, journaled_events = journal_counts(journal)
    assert debug_events(engine) == journaled_events
    hits = engine.search(
        EVENTS_STREAM, {"size": 1000, "query": {"term": {"ascend.kind": DEBUG_KIND}}}
    )
    rules = Counter(str(hit["_source"]["rule"]["id"]) for hit in hits)
    assert rules.keys() >= EVENT_RULES, rules
    assert rules["debug.training-nan"] == 1  # rank 1's three NaN rows, deduplicated
    assert {hit["_source"]["log"]["file"]["path"] for hit in hits} <= expected.by_output.keys()

    # Restarted, with one more report in the folder: the agent imports and ships that one, and
    # nothing of the four outputs again (same documents, same ids).
    findings_before, events_before = document_ids(engine, DEBUG_STREAM), debug_events(engine)
    assert len(findings_before) == expected.total
    shutil.copy2(DEBUG / "sanitizer" / "racecheck.log", debug / "racecheck.log")
    more = expected_in(debug)
    added = more.by_output[str(debug / "racecheck.log")]
    assert more.total == expected.total + added and added > 0
    agent = start_agent(config, log)
    try:
        took = wait_until(shipped_everything(engine, journal, more.total), SHIPPED_WITHIN)
        time.sleep(2)  # several scans more: anything imported twice would be shipped by now
    finally:
        status = stop_agent(agent)
    assert took >= 0, (
        f"{counted(engine, DEBUG_STREAM)} of {more.total} findings after the restart\n"
        f"{diagnostics(log)}"
    )
    assert status == 0, diagnostics(log)
    findings_after = document_ids(engine, DEBUG_STREAM)
    assert len(findings_after) == more.total
    assert set(findings_before) <= set(findings_after)
    racecheck = {"term": {"log.file.path": str(debug / "racecheck.log")}}
    assert counted(engine, DEBUG_STREAM, racecheck) == added
    assert debug_events(engine) == journal_counts(journal)[1] > events_before
