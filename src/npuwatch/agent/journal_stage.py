"""The journal thread: group commits of records, events and checkpoints, and retention.

Work is gathered for `commit_interval` and written in one transaction, the records of each file
as one block. When the journal cannot be written (disk full) the same batch is retried with a
growing pause; meanwhile the queues fill and the reader pauses, so the bytes wait in the files
and nothing is lost or committed out of order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from npuwatch.agent.queue import ByteQueue
from npuwatch.agent.rules_stage import END
from npuwatch.handoff import Checkpoint, EventRow, JournalWork, StateRow
from npuwatch.journal.block import BlockTally, encode_block
from npuwatch.journal.rows import FileSource
from npuwatch.journal.segment import BlockToWrite
from npuwatch.journal.store import CommitBatch, Journal, JournalUnavailable
from npuwatch.metrics import SelfMetrics
from npuwatch.records import Record, SourceInfo

log = logging.getLogger(__name__)

_BLOCK_BYTES = 4 * 1024 * 1024
"""A file's records in one commit are cut into blocks of about this much text."""


class CommitObserver(Protocol):
    """Told what each commit wrote (the ascend_* log metrics are counted this way)."""

    def observe_tally(self, tally: BlockTally, kind: str) -> None:
        """The tally of a block of one file (or telemetry stream) of the `kind` its source
        says (counted while the block was encoded: no pass over its records again)."""

    def observe_events(self, events: Sequence[EventRow]) -> None:
        """Rule events, each once (the batch is deduplicated by event id)."""


@dataclass(frozen=True)
class JournalTiming:
    commit_interval_s: float = 0.5
    commit_bytes: int = 4 * 1024 * 1024
    retention_interval_s: float = 60.0
    gauge_interval_s: float = 5.0
    max_backoff_s: float = 30.0


class JournalStage:
    """Writes what the rules thread hands on, in order, in group commits."""

    def __init__(
        self,
        journal: Journal,
        inbox: ByteQueue[object],
        metrics: SelfMetrics,
        timing: JournalTiming,
        timezone_name: str | None = None,
        give_up: threading.Event | None = None,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        observers: Sequence[CommitObserver] = (),
    ) -> None:
        self.journal = journal
        self._observers = observers
        self._inbox = inbox
        self._metrics = metrics
        self.timing = timing
        self._timezone = timezone_name
        self._give_up = give_up or threading.Event()
        self._wall = wall
        self._monotonic = monotonic
        self.committed = threading.Condition()
        """Notified after every commit (sinks wait on it for new entries)."""
        self._last_commit = wall()
        self.thread = threading.Thread(target=self._run, name="npuwatch-journal", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        pending: list[JournalWork] = []
        pending_bytes = 0
        first_at = 0.0
        next_retention = self._monotonic()
        next_gauges = 0.0
        timing = self.timing
        while not self._give_up.is_set():  # set only when the agent abandons its drain
            item = self._inbox.get(timeout=timing.commit_interval_s)
            if item is END:
                self._commit(pending)
                return
            if isinstance(item, JournalWork):
                if not pending:
                    first_at = self._monotonic()
                pending.append(item)
                pending_bytes += item.size
            now = self._monotonic()
            if pending and (
                now - first_at >= timing.commit_interval_s or pending_bytes >= timing.commit_bytes
            ):
                if not self._commit(pending):
                    return
                pending, pending_bytes = [], 0
            if now >= next_retention:
                self._retention()
                next_retention = now + timing.retention_interval_s
            if now >= next_gauges:
                self._update_gauges()
                next_gauges = now + timing.gauge_interval_s

    def _commit(self, works: list[JournalWork]) -> bool:
        """Write `works` in one transaction, retrying while the journal is unavailable. False
        when the agent gave up waiting (shutdown past its drain time)."""
        batch = self.build_batch(works)
        if not batch:
            return True
        pause = min(0.5, self.timing.max_backoff_s)
        while True:
            try:
                self.journal.commit(batch)
                break
            except JournalUnavailable as error:
                self._metrics.journal_commit_failures.inc()
                if not self._metrics.value("npuwatch_journal_unavailable"):
                    log.error(
                        "cannot write the journal (%s): reading is paused, nothing is lost; "
                        "free space in %s",
                        error,
                        self.journal.directory,
                    )
                self._metrics.journal_unavailable.set(1)
                if self._give_up.wait(pause):
                    return False
                pause = min(pause * 2, self.timing.max_backoff_s)
        if self._metrics.value("npuwatch_journal_unavailable"):
            log.warning("the journal is writable again; reading resumes")
            self._metrics.journal_unavailable.set(0)
        self._count(batch)
        self._last_commit = self._wall()
        with self.committed:
            self.committed.notify_all()
        return True

    def build_batch(self, works: list[JournalWork]) -> CommitBatch:
        batch = CommitBatch()
        groups: dict[str, list[tuple[SourceInfo | None, list[Record], int]]] = {}
        checkpoints: dict[str, Checkpoint] = {}
        forget: dict[str, None] = {}
        events: dict[str, EventRow] = {}
        states: dict[str, StateRow] = {}
        for work in works:
            if work.records:
                runs = groups.setdefault(work.file_key, [])
                if runs and runs[-1][2] < _BLOCK_BYTES:
                    source, records, size = runs[-1]
                    records.extend(work.records)
                    runs[-1] = (work.source or source, records, size + work.size)
                else:
                    runs.append((work.source, list(work.records), work.size))
            if work.forget is not None:
                checkpoints.pop(work.forget, None)
                forget[work.forget] = None
            if work.checkpoint is not None:
                checkpoints[work.file_key] = work.checkpoint
            for row in work.events:
                events[row.id] = row
            for state in work.states:
                states.pop(state.id, None)  # the newest version, in the order of the newest
                states[state.id] = state
        compress = self.journal.settings.compress
        for key, runs in groups.items():
            for source, records, _ in runs:
                info = source or SourceInfo()
                where = FileSource(
                    key, info.path or "", info.host, info.kind, info.channel, info.device,
                    info.pid, self._timezone,
                )  # fmt: skip
                batch.blocks.append(
                    BlockToWrite(
                        where,
                        encode_block(records, compress),
                        records[0].offset,
                        records[-1].end_offset,
                    )
                )
        batch.checkpoints = list(checkpoints.values())
        batch.forget = list(forget)
        batch.events = list(events.values())
        batch.states = list(states.values())
        return batch

    def _count(self, batch: CommitBatch) -> None:
        levels: Counter[str | None] = Counter()
        for written in batch.blocks:
            for (level, _), count in written.block.tally.records.items():
                levels[level] += count
        for level, count in levels.items():
            self._metrics.records.labels(level or "none").inc(count)
        for row in batch.events:
            self._metrics.events.labels(row.severity).inc()
        for observer in self._observers:
            for written in batch.blocks:
                observer.observe_tally(written.block.tally, written.source.kind or "other")
            observer.observe_events(batch.events)

    def _retention(self) -> None:
        try:
            deleted = self.journal.apply_retention()
        except OSError as error:
            log.warning("journal retention failed: %s", error)
            return
        if deleted:
            self._metrics.journal_segments_deleted.inc(len(deleted))
            log.info("journal retention removed %d segment(s)", len(deleted))

    def _update_gauges(self) -> None:
        self._metrics.journal_bytes.set(self.journal.total_bytes())
        oldest = self.journal.oldest_write_s()
        now = self._wall()
        self._metrics.journal_age.set(0 if oldest is None else max(now - oldest, 0))
        self._metrics.checkpoint_age.set(max(now - self._last_commit, 0))
