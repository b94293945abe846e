"""The journal thread on its own: what one commit holds, when it commits, and what a journal that
cannot be written does to it.

A real journal in a temporary folder, fed through a real queue with the work the rules thread
would hand on. The stage's monotonic clock is a fake moved by the tests, so that "the commit
interval has passed" is a step of the test, not a sleep; what the journal holds is read back
with the journal reader.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from npuwatch.agent.journal_stage import CommitObserver, JournalStage, JournalTiming
from npuwatch.agent.queue import ByteQueue
from npuwatch.agent.rules_stage import END
from npuwatch.handoff import Checkpoint, EventRow, JournalWork
from npuwatch.journal.block import BlockTally, decode_block, tally_of
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.segment import StoredBlock
from npuwatch.journal.store import CommitBatch, Journal, JournalSettings, JournalUnavailable
from npuwatch.metrics import SelfMetrics
from tests.agent.harness import plog_line, wait_until
from tests.conftest import parse

INTERVAL_S = 0.0625  # exact in binary: the fake clock adds it to 100.0 without rounding
WAIT_S = 10.0
PLOG = "/logs/debug/plog/plog-7_20250914093300000.log"
DEVICE = "/logs/debug/device-0/device-2001_20250914093300000.log"


class LogFile:
    """A followed file's records (parsed whole, so that offsets are those of the file), handed
    on in slices as the rules thread would."""

    def __init__(self, path: str, key: str, count: int, text: str = "step") -> None:
        self.path = path
        self.key = key
        pid = 7 if path == PLOG else 2001
        data = "".join(plog_line(pid, number, text=text) + "\n" for number in range(count))
        self.records = parse(data, path)
        assert len(self.records) == count

    def work(
        self, start: int, stop: int, events: Sequence[EventRow] = (), source: bool = True
    ) -> JournalWork:
        records = self.records[start:stop]
        end = records[-1].end_offset or 0
        return JournalWork(
            file_key=self.key,
            source=records[0].source if source else None,
            records=records,
            events=list(events),
            checkpoint=checkpoint(self.key, self.path, end),
            size=sum(len(record.original.encode()) + 1 for record in records),
        )

    def originals(self, start: int, stop: int) -> list[str]:
        return [record.original for record in self.records[start:stop]]


def checkpoint(key: str, path: str, offset: int) -> Checkpoint:
    return Checkpoint(
        file_key=key,
        path=path,
        device=0xFD01,
        inode=int(key, 16),
        fingerprint_length=16,
        fingerprint="00" * 8,
        offset=offset,
        replay_from=offset,
        size=offset,
        updated_us=1_757_842_380_000_000,
    )


def event(id_: str, severity: str = "critical") -> EventRow:
    return EventRow(
        id=id_,
        timestamp_us=1_757_842_380_000_000,
        rule="hccl-notify-timeout",
        category="communication",
        severity=severity,
        level="ERROR",
        logger="HCCL",
        code="EI0002",
        device=0,
        host="node-1",
        path=PLOG,
        file_key="7b",
        offset=0,
        pid=7,
        count=1,
        document=json.dumps({"event": {"id": id_}}),
    )


class Clock:
    """A monotonic clock moved by hand; counts how often the stage looked at it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


class RefusingJournal(Journal):
    """A real journal whose disk is full while `full` is set (the seam: `commit` refuses)."""

    def __init__(self, directory: Path, settings: JournalSettings) -> None:
        super().__init__(directory, settings)
        self.full = threading.Event()
        self.refused = 0
        self.batches: list[CommitBatch] = []
        """Every batch `commit` was asked to write, refused or not."""

    def commit(self, batch: CommitBatch) -> None:
        self.batches.append(batch)
        if self.full.is_set():
            self.refused += 1
            raise JournalUnavailable("database or disk is full")
        super().commit(batch)


class Observed:
    """A CommitObserver that writes down what it was told."""

    def __init__(self) -> None:
        self.tallies: list[tuple[BlockTally, str]] = []
        self.events: list[list[str]] = []

    def observe_tally(self, tally: BlockTally, kind: str) -> None:
        self.tallies.append((tally, kind))

    def observe_events(self, events: Sequence[EventRow]) -> None:
        self.events.append([row.id for row in events])


class Staged:
    """A journal stage over a real journal, and what the journal holds."""

    def __init__(
        self,
        tmp_path: Path,
        full_disk: bool = False,
        observers: Sequence[CommitObserver] = (),
        max_backoff_s: float = 30.0,
    ) -> None:
        directory = tmp_path / "journal"
        settings = JournalSettings(sync="normal")
        self.journal = RefusingJournal(directory, settings) if full_disk else None
        journal = self.journal or Journal(directory, settings)
        journal.open()
        self.directory = directory
        self.clock = Clock()
        self.inbox: ByteQueue[object] = ByteQueue(1 << 28)
        self.metrics = SelfMetrics()
        self.give_up = threading.Event()
        self.stage = JournalStage(
            journal,
            self.inbox,
            self.metrics,
            JournalTiming(commit_interval_s=INTERVAL_S, max_backoff_s=max_backoff_s),
            "UTC",
            give_up=self.give_up,
            monotonic=self.clock,
            observers=observers,
        )

    def give(self, *works: JournalWork) -> None:
        for work in works:
            self.inbox.put(work, work.size)

    def end(self) -> None:
        """Put END and wait for the thread to end."""
        self.inbox.put_always(END)
        self.stage.thread.join(WAIT_S)
        assert not self.stage.thread.is_alive(), "the journal thread did not end"

    def close(self) -> None:
        if self.stage.thread.is_alive():
            self.give_up.set()
            self.inbox.put_always(END)
            self.stage.thread.join(WAIT_S)
        self.stage.journal.close()

    def metric(self, name: str) -> float:
        return self.metrics.value(name)

    def blocks(self) -> list[StoredBlock]:
        found: list[StoredBlock] = []
        with JournalReader(self.directory) as reader:
            position = Position()
            while page := reader.blocks_after(position, 64):
                found.extend(block for _, block in page)
                position = page[-1][0]
        return found

    def originals(self) -> list[str]:
        return [
            record.original for block in self.blocks() for record in decode_block(block.payload)
        ]

    def event_ids(self) -> list[str]:
        with JournalReader(self.directory) as reader:
            return [id_ for _, id_, _ in reader.event_rows_after(Position())]

    def wait_taken(self) -> None:
        """Wait until the stage took all it was given, and looked at its clock since."""
        wait_until(lambda: len(self.inbox) == 0, WAIT_S)
        wait_until(self.clock_read_again(2), WAIT_S)

    def clock_read_again(self, times: int) -> Callable[[], bool]:
        """A condition: the stage looked at its clock `times` more times from now."""
        start = self.clock.reads
        return lambda: self.clock.reads >= start + times


@pytest.fixture
def staged(tmp_path: Path) -> Iterator[Callable[..., Staged]]:
    """Make a stage (at most one per test: one journal folder); its thread is ended and its
    journal closed after the test."""
    made: list[Staged] = []

    def make(
        full_disk: bool = False,
        observers: Sequence[CommitObserver] = (),
        max_backoff_s: float = 30.0,
    ) -> Staged:
        made.append(Staged(tmp_path, full_disk, observers, max_backoff_s))
        return made[-1]

    yield make
    for one in made:
        one.close()


PLOG_FILE = LogFile(PLOG, "7b", 12)
DEVICE_FILE = LogFile(DEVICE, "7d1", 6)


# --- what one commit holds ---------------------------------------------------------------------


def test_the_records_of_one_file_in_one_commit_are_written_as_one_block(
    staged: Callable[..., Staged],
) -> None:
    one = staged()
    batch = one.stage.build_batch(
        [PLOG_FILE.work(0, 4), DEVICE_FILE.work(0, 6), PLOG_FILE.work(4, 10)]
    )
    assert [block.source.file_key for block in batch.blocks] == ["7b", "7d1"]
    plog, device = batch.blocks
    assert [r.original for r in decode_block(plog.block.payload)] == PLOG_FILE.originals(0, 10)
    assert (plog.first_offset, plog.end_offset) == (0, PLOG_FILE.records[9].end_offset)
    assert plog.source.path == PLOG
    assert plog.source.kind == "plog"
    assert plog.source.timezone == "UTC"
    assert [r.original for r in decode_block(device.block.payload)] == DEVICE_FILE.originals(0, 6)
    assert device.source.kind == "device"


def test_a_files_records_are_cut_into_a_new_block_once_a_block_holds_4_mib_of_text(
    staged: Callable[..., Staged],
) -> None:
    """Four reads of about 1.46 MiB each: the first three make one block (it held 2.9 MiB, under
    4 MiB, when the third came), the fourth starts another."""
    big = LogFile(PLOG, "7b", 4 * 1400, text="x" * 1024)
    works = [big.work(index * 1400, (index + 1) * 1400) for index in range(4)]
    assert all(1.4 * 2**20 < work.size < 1.5 * 2**20 for work in works)
    one = staged()
    batch = one.stage.build_batch(works)
    assert [len(decode_block(block.block.payload)) for block in batch.blocks] == [3 * 1400, 1400]
    assert batch.blocks[1].first_offset == big.records[3 * 1400].offset
    assert [r.original for b in batch.blocks for r in decode_block(b.block.payload)] == [
        record.original for record in big.records
    ]


def test_a_commit_keeps_the_last_checkpoint_of_each_file(staged: Callable[..., Staged]) -> None:
    one = staged()
    batch = one.stage.build_batch(
        [PLOG_FILE.work(0, 4), DEVICE_FILE.work(0, 6), PLOG_FILE.work(4, 10)]
    )
    assert batch.checkpoints == [
        checkpoint("7b", PLOG, PLOG_FILE.records[9].end_offset or 0),
        checkpoint("7d1", DEVICE, DEVICE_FILE.records[5].end_offset or 0),
    ]


def test_a_commit_holds_each_event_once_by_its_id(staged: Callable[..., Staged]) -> None:
    """The same event id twice in one commit: one row, the later one, where the first stood."""
    one = staged()
    later = event("e1", severity="major")
    batch = one.stage.build_batch(
        [
            PLOG_FILE.work(0, 4, events=[event("e1"), event("e2")]),
            DEVICE_FILE.work(0, 6, events=[later]),
        ]
    )
    assert [row.id for row in batch.events] == ["e1", "e2"]
    assert batch.events[0] == later


def test_a_forgotten_file_loses_its_checkpoint_in_the_commit(
    staged: Callable[..., Staged],
) -> None:
    one = staged()
    gone = JournalWork("7b", None, forget="7b")  # as the rules thread says a file is gone
    batch = one.stage.build_batch([PLOG_FILE.work(0, 4), DEVICE_FILE.work(0, 6), gone])
    assert [c.file_key for c in batch.checkpoints] == ["7d1"]
    assert batch.forget == ["7b"]
    assert len(batch.blocks) == 2  # the records read before it went are journaled


# --- when it commits ---------------------------------------------------------------------------


def test_work_is_committed_once_the_commit_interval_has_passed_and_committed_is_notified(
    staged: Callable[..., Staged],
) -> None:
    one = staged()
    one.stage.start()
    with one.stage.committed:
        one.give(PLOG_FILE.work(0, 4))
        one.wait_taken()
        wait_until(one.clock_read_again(3), WAIT_S)
        assert one.blocks() == []  # the interval has not passed on the stage's clock
        one.clock.now += INTERVAL_S
        assert one.stage.committed.wait(WAIT_S)
    assert one.originals() == PLOG_FILE.originals(0, 4)
    with one.stage.committed:
        one.give(PLOG_FILE.work(4, 10))
        one.wait_taken()
        one.clock.now += INTERVAL_S
        assert one.stage.committed.wait(WAIT_S)
    assert one.originals() == PLOG_FILE.originals(0, 10)
    assert len(one.blocks()) == 2
    assert one.stage.journal.checkpoints["7b"].offset == PLOG_FILE.records[9].end_offset


def test_work_given_within_the_commit_interval_is_committed_together(
    staged: Callable[..., Staged],
) -> None:
    observed = Observed()
    one = staged(observers=[observed])
    one.give(PLOG_FILE.work(0, 4), DEVICE_FILE.work(0, 6), PLOG_FILE.work(4, 10))
    one.stage.start()
    one.wait_taken()
    with one.stage.committed:
        one.clock.now += INTERVAL_S
        assert one.stage.committed.wait(WAIT_S)
    assert len(observed.events) == 1  # one commit
    assert len(one.blocks()) == 2  # one block per file
    assert one.originals() == PLOG_FILE.originals(0, 10) + DEVICE_FILE.originals(0, 6)


def test_end_commits_what_is_pending_and_ends_the_thread(staged: Callable[..., Staged]) -> None:
    one = staged()
    one.give(PLOG_FILE.work(0, 4), PLOG_FILE.work(4, 12))
    one.stage.start()
    one.end()  # the stage's clock never moved: END alone commits
    assert one.originals() == PLOG_FILE.originals(0, 12)
    assert one.stage.journal.checkpoints["7b"].offset == PLOG_FILE.records[11].end_offset


def test_end_with_nothing_pending_ends_the_thread_without_a_commit(
    staged: Callable[..., Staged],
) -> None:
    observed = Observed()
    one = staged(observers=[observed])
    one.stage.start()
    one.end()
    assert one.blocks() == []
    assert observed.events == []


# --- who is told -------------------------------------------------------------------------------


def test_every_observer_is_told_the_tally_of_each_committed_block_with_its_kind_once(
    staged: Callable[..., Staged],
) -> None:
    observers = [Observed(), Observed()]
    one = staged(observers=observers)
    one.give(
        PLOG_FILE.work(0, 4, events=[event("e1")]),
        DEVICE_FILE.work(0, 6, events=[event("e1"), event("e2")]),
        PLOG_FILE.work(4, 6, source=False),
    )
    one.stage.start()
    one.wait_taken()
    with one.stage.committed:
        one.clock.now += INTERVAL_S
        assert one.stage.committed.wait(WAIT_S)
    one.give(PLOG_FILE.work(6, 12, events=[event("e3")]))
    one.end()
    for observed in observers:
        assert observed.tallies == [
            # A slice handed on without its source joins its file's block, and its kind.
            (tally_of(PLOG_FILE.records[0:6]), "plog"),
            (tally_of(DEVICE_FILE.records[0:6]), "device"),
            (tally_of(PLOG_FILE.records[6:12]), "plog"),
        ]
        assert observed.events == [["e1", "e2"], ["e3"]]
    assert one.event_ids() == ["e1", "e2", "e3"]


def test_committed_records_and_events_are_counted_once_by_level_and_severity(
    staged: Callable[..., Staged],
) -> None:
    one = staged()
    one.give(
        PLOG_FILE.work(0, 4, events=[event("e1")]),
        DEVICE_FILE.work(0, 6, events=[event("e1"), event("e2", severity="major")]),
    )
    one.stage.start()
    one.end()
    assert one.metrics.value("npuwatch_records_total", {"level": "INFO"}) == 10
    assert one.metrics.value("npuwatch_events_total", {"severity": "critical"}) == 1
    assert one.metrics.value("npuwatch_events_total", {"severity": "major"}) == 1


# --- a journal that cannot be written ----------------------------------------------------------


def test_a_batch_the_journal_refuses_is_retried_until_written_once_and_in_order(
    staged: Callable[..., Staged], caplog: pytest.LogCaptureFixture
) -> None:
    one = staged(full_disk=True, max_backoff_s=0.05)
    journal = one.journal
    assert journal is not None
    journal.full.set()
    caplog.set_level(logging.WARNING, logger="npuwatch.agent.journal_stage")
    one.give(PLOG_FILE.work(0, 4, events=[event("e1")]))
    one.stage.start()
    one.wait_taken()
    one.clock.now += INTERVAL_S
    wait_until(lambda: journal.refused >= 3, WAIT_S)
    one.give(PLOG_FILE.work(4, 12, events=[event("e2")]))  # waits in the queue meanwhile
    assert one.metric("npuwatch_journal_unavailable") == 1
    assert one.blocks() == []
    with one.stage.committed:
        journal.full.clear()
        assert one.stage.committed.wait(WAIT_S)
    refused = journal.refused
    assert one.metric("npuwatch_journal_unavailable") == 0
    assert one.metric("npuwatch_journal_commit_failures_total") == refused
    assert journal.batches[: refused + 1] == [journal.batches[0]] * (refused + 1)
    one.clock.now += INTERVAL_S
    one.end()
    assert one.originals() == PLOG_FILE.originals(0, 12)
    assert [block.count for block in one.blocks()] == [4, 8]
    assert one.event_ids() == ["e1", "e2"]
    assert len(journal.batches) == refused + 2
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "cannot write the journal" in errors[0].getMessage()
    assert sum("writable again" in r.getMessage() for r in caplog.records) == 1


def test_giving_up_ends_a_stage_stuck_retrying_without_committing(
    staged: Callable[..., Staged],
) -> None:
    one = staged(full_disk=True)
    journal = one.journal
    assert journal is not None
    journal.full.set()
    one.give(PLOG_FILE.work(0, 4))
    one.stage.start()
    one.wait_taken()
    one.clock.now += INTERVAL_S
    wait_until(lambda: journal.refused >= 1, WAIT_S)
    one.give_up.set()
    one.stage.thread.join(WAIT_S)
    assert not one.stage.thread.is_alive()
    assert journal.refused == 1  # the first pause (0.5 s) was cut short
    assert one.blocks() == []
    assert one.stage.journal.checkpoints == {}
