"""The agent journals the rule events `scan` reports for the same files: the same rules, at the
same records, with the same counts, whatever order its reader hands the files over in.

The agent reads a tree of old logs file by file, holds each file's last record until the file is
quiet, and closes dedupe windows as it goes; `scan` reads everything and closes them at the end.
An event must not be closed by another file's later log time (or the wall clock) before its own
file's held record has joined it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npuwatch.journal.reader import JournalReader, Position
from tests.agent.harness import Harness
from tests.conftest import REPO

COLLECTIONS = REPO / "fixtures" / "collective"
HOSTS = sorted(
    host
    for collection in COLLECTIONS.iterdir()
    if collection.is_dir()
    for host in collection.iterdir()
    if host.is_dir()
)

EventKey = tuple[str, str, int | None, int]
"""A rule's id, the trigger's file name and offset, and the matches the event stands for."""


def _key(document: dict) -> EventKey:  # type: ignore[type-arg]
    log = document["log"]
    return (
        document["rule"]["id"],
        Path(log["file"]["path"]).name,
        log.get("offset"),
        document["ascend"]["finding"]["count"],
    )


def scanned(tree: Path) -> list[EventKey]:
    report = subprocess.run(
        [sys.executable, "-m", "npuwatch", "scan", str(tree), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode in (0, 1), report.stderr
    return sorted(map(_key, json.loads(report.stdout)["events"]))


def journaled(state: Path) -> list[EventKey]:
    documents = []
    with JournalReader(state / "journal") as reader:
        position = Position()
        while rows := reader.event_rows_after(position, 512):
            documents += [json.loads(document) for _, _, document in rows]
            position = rows[-1][0]
    return sorted(_key(document) for document in documents if "rule" in document)


def settled(harness: Harness, quiet_s: float) -> None:
    """Wait until the journal's records have not changed for `quiet_s` (every file read, its
    held last record flushed by the idle flush)."""
    last, since = -1, time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        count = sum(1 for _ in harness.records()) if (harness.state / "journal").is_dir() else 0
        if count != last:
            last, since = count, time.monotonic()
        elif count and time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.1)
    raise AssertionError("the agent's journal did not settle within 60 s")


@pytest.mark.parametrize("host", HOSTS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_agent_journals_the_events_scan_reports(tmp_path: Path, host: Path) -> None:
    expected = scanned(host)
    harness = Harness(tmp_path, idle_flush=0.3)
    shutil.copytree(host, harness.logs, dirs_exist_ok=True)
    harness.start()
    try:
        settled(harness, quiet_s=1.0)
    finally:
        harness.stop()
    assert journaled(harness.state) == expected
