"""The rules thread keeps the context-before windows of a bounded number of files."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from npuwatch.agent.journal_stage import JournalStage, JournalTiming
from npuwatch.agent.queue import ByteQueue
from npuwatch.agent.rules_stage import END, RulesStage
from npuwatch.collector.identity import FileIdentity
from npuwatch.collector.tailed_file import ReadBatch
from npuwatch.handoff import JournalWork
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import Journal
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules

CLOCK = LocalClock(resolve_timezone("UTC"))


def line(pid: int, second: int, level: str, text: str) -> str:
    return (
        f"[{level}] RUNTIME({pid},python3):2025-09-14-09:30:{second:02d}.000.000 "
        f"[stream.cc:88]{pid + 1} Sync: {text}"
    )


class Files:
    """Read batches of a few plog files, each with its own parser and offsets."""

    def __init__(self) -> None:
        self._parsers: dict[int, StreamParser] = {}
        self._offsets: dict[int, int] = {}

    def batch(self, pid: int, lines: list[str]) -> ReadBatch:
        path = f"/logs/debug/plog/plog-{pid}_20250914093000000.log"
        parser = self._parsers.setdefault(pid, StreamParser(CLOCK, path=path, host="node-1"))
        data = "".join(text + "\n" for text in lines).encode()
        start = self._offsets.get(pid, 0)
        records = parser.feed(data, start) + parser.flush()
        self._offsets[pid] = start + len(data)
        identity = FileIdentity(1, pid, 16, f"{pid:016x}")
        return ReadBatch(
            file_key=identity.key,
            path=path,
            source=parser.source,
            records=records,
            raw=data,
            hints=None,
            journal_from=0,
            offset=start + len(data),
            size=start + len(data),
            identity=identity,
            bytes_read=len(data),
            lines_read=len(lines),
        )


def read_back(works: list[JournalWork], directory: Path) -> list[dict[str, Any]]:
    """The events of `works` as the journal gives them back, after the journal thread's batch
    of them is committed (the journal keeps an event's context as a reference to the blocks)."""
    journal = Journal(directory)
    journal.open()
    stage = JournalStage(journal, ByteQueue(1), SelfMetrics(), JournalTiming(), "UTC")
    journal.commit(stage.build_batch(works))
    journal.close()
    with JournalReader(directory) as reader:
        return [json.loads(doc) for _, _, doc in reader.event_rows_after(Position(), 1000)]


def context_before_the_error(context_files: int, directory: Path) -> list[str]:
    """Three files write; then the first one logs a coded error. The lines its event lists as
    context before."""
    engine = RuleEngine(load_rules(default_locations()))
    inbox: ByteQueue[object] = ByteQueue(1 << 24)
    outbox: ByteQueue[object] = ByteQueue(1 << 24)
    stage = RulesStage(
        engine, inbox, outbox, threading.Event(), SelfMetrics(), context_files=context_files
    )
    files = Files()
    first = [line(100, second, "INFO", f"step {second} done") for second in range(3)]
    for batch in (
        files.batch(100, first),
        files.batch(200, [line(200, 5, "INFO", "other process")]),
        files.batch(300, [line(300, 6, "INFO", "third process")]),
        files.batch(100, [line(100, 9, "ERROR", "stream sync failed, error code EE9999")]),
    ):
        inbox.put(batch, batch.bytes_read, threading.Event())
    inbox.put_always(END)
    stage.start()
    stage.thread.join(30)
    assert not stage.thread.is_alive()
    works = []
    while (item := outbox.get(timeout=0)) is not None and item is not END:
        if isinstance(item, JournalWork):
            works.append(item)
    documents = read_back(works, directory)
    triggered = [d for d in documents if "EE9999" in d["message"]]
    assert triggered, [d["rule"]["id"] for d in documents]
    before: list[str] = triggered[0]["ascend"]["finding"]["context"]["before"]
    return before


def test_a_file_among_the_most_recent_keeps_its_context_before(tmp_path: Path) -> None:
    before = context_before_the_error(context_files=3, directory=tmp_path)
    assert [text for text in before if "step" in text] == [
        line(100, second, "INFO", f"step {second} done") for second in range(3)
    ]


def test_a_file_quiet_while_more_files_wrote_than_the_bound_loses_its_context_before(
    tmp_path: Path,
) -> None:
    before = context_before_the_error(context_files=2, directory=tmp_path)
    assert not [text for text in before if "step" in text]


def test_an_event_whose_file_goes_quiet_is_journaled_without_waiting_for_more_records(
    tmp_path: Path,
) -> None:
    """A rank's last error, followed by two lines before its process died: the event does not
    wait forever for the five records of context after it."""
    engine = RuleEngine(load_rules(default_locations()))
    inbox: ByteQueue[object] = ByteQueue(1 << 24)
    outbox: ByteQueue[object] = ByteQueue(1 << 24)
    stop = threading.Event()
    stage = RulesStage(engine, inbox, outbox, stop, SelfMetrics(), idle_flush_s=0.2)
    lines = [
        line(100, 1, "ERROR", "stream sync failed, error code EE9999"),
        line(100, 2, "INFO", "dumping state"),
        line(100, 3, "INFO", "exiting"),
    ]
    batch = Files().batch(100, lines)
    inbox.put(batch, batch.bytes_read, stop)
    stage.start()
    works: list[JournalWork] = []
    deadline = time.monotonic() + 10
    while not any(w.events for w in works) and time.monotonic() < deadline:
        item = outbox.get(timeout=0.2)
        if isinstance(item, JournalWork):
            works.append(item)
    stop.set()
    inbox.put_always(END)
    stage.thread.join(10)
    found = [d for d in read_back(works, tmp_path) if "EE9999" in d["message"]]
    assert found, "the event waited for records that never came"
    after = found[0]["ascend"]["finding"]["context"]["after"]
    assert after == lines[1:]
