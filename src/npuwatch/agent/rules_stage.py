"""The rules thread: records through the rule engine, events out, checkpoints held back.

An event waits in the engine for the records after it (its context) and for its dedupe window.
Until it is journaled, the checkpoint of its file must let a restart read its trigger again; so
each checkpoint carries `replay_from`, the earliest trigger still waiting, and the records
between `replay_from` and the offset are given to the rules, not journaled again, after a crash.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from npuwatch.agent.collective_stage import CollectiveWatch
from npuwatch.agent.queue import ByteQueue, QueueStopped
from npuwatch.collector.tailed_file import ReadBatch
from npuwatch.collector.tailer import FileGone
from npuwatch.handoff import Checkpoint, EventRow, JournalWork
from npuwatch.journal.event_context import stored_document
from npuwatch.metrics import SelfMetrics
from npuwatch.records import SourceInfo
from npuwatch.rules.engine import RuleEngine, RuleStream
from npuwatch.rules.events import Event
from npuwatch.rules.loader import RuleSet

log = logging.getLogger(__name__)

END = object()
"""Put into a stage's input queue after the last item: drain and stop."""


def event_row(event: Event, file_key: str | None) -> EventRow:
    """An event as the journal stores it, with an id that a replay reproduces."""
    trigger = event.trigger
    seed = f"{event.rule.id}\0{file_key}\0{trigger.offset}\0{trigger.timestamp_us}"
    source = event.source
    spec = event.rule.spec
    return EventRow(
        id=hashlib.blake2b(seed.encode(), digest_size=12).hexdigest(),
        timestamp_us=event.first_us,
        rule=spec.id,
        category=spec.category,
        severity=spec.severity,
        level=trigger.level,
        logger=trigger.logger,
        code=event.error_code,
        device=event.device if event.device is not None else (source.device if source else None),
        host=source.host if source else None,
        path=source.path if source else None,
        file_key=file_key,
        offset=trigger.offset,
        pid=trigger.pid,
        count=event.count,
        document=stored_document(
            event.to_document(), file_key, (trigger.offset, trigger.original), event.context_span
        ),
    )


CONTEXT_FILES = 256
"""Files whose last records are kept as the rules' context before (about 50 records each). On a
host with thousands of files (10,000 in 1,000 PID folders), keeping every file's window held
over 100 MB; a file that stayed quiet while this many others wrote starts a new window when it
resumes, so an event right after that lists fewer records before it."""


class RulesStage:
    """Runs the rule engine over read batches in its own thread."""

    def __init__(
        self,
        engine: RuleEngine,
        inbox: ByteQueue[object],
        outbox: ByteQueue[object],
        stop: threading.Event,
        metrics: SelfMetrics,
        reload_rules: Callable[[], RuleSet] | None = None,
        watched_files: Callable[[], list[Path]] = list,
        reload_interval_s: float = 5.0,
        idle_flush_s: float = 5.0,
        wall: Callable[[], float] = time.time,
        context_files: int = CONTEXT_FILES,
        collective: CollectiveWatch | None = None,
    ) -> None:
        self.engine = engine
        self._collective = collective
        """The extraction for the cluster correlator (collective_stage.py), in this thread."""
        self._inbox = inbox
        self._outbox = outbox
        self._stop = stop
        self._metrics = metrics
        self._reload_rules = reload_rules
        self._watched_files = watched_files
        self._reload_interval_s = reload_interval_s
        self._idle_flush_s = idle_flush_s
        self._wall = wall
        self._streams: dict[str, RuleStream] = {}
        self._last_batch: dict[str, float] = {}
        """When each file's last batch came (monotonic), for events waiting on context after;
        least recent first (a file is put last at each batch), so that the files that wrote
        lately are found without walking the thousands that did not (_recent_clocks)."""
        self._recent: OrderedDict[str, None] = OrderedDict()
        """Files whose streams hold a context window, least recently written first."""
        self._context_files = context_files
        self._keys: dict[SourceInfo | None, str] = {}
        self._checkpoints: dict[str, Checkpoint] = {}
        self._rule_mtimes = self._mtimes()
        self._reload_requested = False
        self.thread = threading.Thread(target=self._run, name="npuwatch-rules", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def request_reload(self) -> None:
        self._reload_requested = True

    def _run(self) -> None:
        next_rule_check = time.monotonic() + self._reload_interval_s
        next_quiet_check = time.monotonic()
        try:
            while not self._stop.is_set():  # set only when the agent abandons its drain
                if time.monotonic() >= next_quiet_check:
                    self._release_quiet_streams()
                    self._collective_tick()
                    next_quiet_check = time.monotonic() + min(self._idle_flush_s, 1.0)
                item = self._inbox.get(timeout=min(self._idle_flush_s, 1.0))
                if item is END:
                    self._finish()
                    return
                if isinstance(item, ReadBatch):
                    self._process(item)
                elif isinstance(item, FileGone):
                    self._gone(item)
                elif item is None:
                    # Idle: close dedupe windows by the wall clock, since log time stands still
                    # (those of files that wrote lately by their own log time: _recent_clocks).
                    wall_us = int(self._wall() * 1_000_000)
                    self._send_events(self.engine.drain(wall_us, self._recent_clocks()))
                if self._reload_requested or time.monotonic() >= next_rule_check:
                    self._maybe_reload(forced=self._reload_requested)
                    self._reload_requested = False
                    next_rule_check = time.monotonic() + self._reload_interval_s
        except QueueStopped:
            return

    def _release_quiet_streams(self) -> None:
        """An event waits for records after it (its context); when its file has been quiet for
        the idle-flush time, it stops waiting. Otherwise the last error of a process that died
        right after it (the usual case) would wait, and never reach the journal or an alert,
        until the file was deleted."""
        now = time.monotonic()
        for key, stream in self._streams.items():
            if stream.pending and now - self._last_batch.get(key, now) >= self._idle_flush_s:
                stream.close()

    def _recent_clocks(self) -> dict[SourceInfo | None, int]:
        """The log time of each file that sent a batch within twice the idle-flush time. Their
        events close by their own file's time: the reader holds a file's last record until the
        file has been quiet for the idle-flush time (the queue delays it a little more), and
        that record must join the events it belongs to, as in `scan`, however far the other
        files' time (or the wall clock, in a tree of old logs) has gone past their windows."""
        since = time.monotonic() - 2 * self._idle_flush_s
        clocks: dict[SourceInfo | None, int] = {}
        for key, when in reversed(self._last_batch.items()):
            if when <= since:
                break
            stream = self._streams.get(key)
            if stream is not None:
                clocks[stream.source] = stream.now_us
        return clocks

    def _process(self, batch: ReadBatch) -> None:
        self._last_batch.pop(batch.file_key, None)  # put last: the most recent
        self._last_batch[batch.file_key] = time.monotonic()
        stream = self._streams.get(batch.file_key)
        if stream is None:
            stream = self._streams[batch.file_key] = self.engine.stream(batch.source)
        self._keys[batch.source] = batch.file_key
        records = batch.records
        self.engine.process(records, stream, batch.raw, batch.hints)
        if batch.end_of_stream:
            stream.close()
            del self._streams[batch.file_key]
            self._recent.pop(batch.file_key, None)
            self._last_batch.pop(batch.file_key, None)
        else:
            self._keep_window(batch.file_key)
        if batch.journal_from:  # a replay after a restart: those records are journaled
            records = [r for r in records if r.offset is None or r.offset >= batch.journal_from]
        waiting = self.engine.waiting_offsets().get(batch.source)
        identity = batch.identity
        checkpoint = Checkpoint(
            file_key=batch.file_key,
            path=batch.path,
            device=identity.device,
            inode=identity.inode,
            fingerprint_length=identity.fingerprint_length,
            fingerprint=identity.fingerprint,
            offset=max(batch.offset, batch.journal_from),
            replay_from=min(batch.offset, waiting) if waiting is not None else batch.offset,
            size=batch.size,
            updated_us=int(self._wall() * 1_000_000),
            mark_end=batch.mark.end,
            mark_length=batch.mark.length,
            mark_digest=batch.mark.digest,
            generation=identity.generation,
        )
        self._checkpoints[batch.file_key] = checkpoint
        work = JournalWork(batch.file_key, batch.source, records, checkpoint=checkpoint)
        work.events = self._rows(self.engine.drain(recent=self._recent_clocks()))
        if self._collective is not None:
            rows, work.states = self._collective.observe(
                batch.records, batch.file_key, time.monotonic(), batch.first_line
            )
            work.events.extend(rows)
        work.size = len(batch.raw) if batch.raw else 0
        self._outbox.put(work, work.size, self._stop)

    def _collective_tick(self) -> None:
        if self._collective is None:
            return
        rows, states = self._collective.tick(time.monotonic(), int(self._wall() * 1_000_000))
        if rows or states:
            self._outbox.put(JournalWork("", None, events=rows, states=states), 0, self._stop)

    def _keep_window(self, file_key: str) -> None:
        """Mark the file's window as the most recent; empty the windows beyond the bound."""
        self._recent[file_key] = None
        self._recent.move_to_end(file_key)
        while len(self._recent) > self._context_files:
            oldest, _ = self._recent.popitem(last=False)
            stream = self._streams.get(oldest)
            if stream is not None:
                stream.window.clear()

    def _gone(self, gone: FileGone) -> None:
        self._streams.pop(gone.file_key, None)
        self._last_batch.pop(gone.file_key, None)
        self._recent.pop(gone.file_key, None)
        self._checkpoints.pop(gone.file_key, None)
        self._outbox.put(JournalWork(gone.file_key, None, forget=gone.file_key), 0, self._stop)

    def _rows(self, events: list[Event]) -> list[EventRow]:
        return [event_row(event, self._keys.get(event.source)) for event in events]

    def _send_events(self, events: list[Event]) -> None:
        if events:
            self._outbox.put(JournalWork("", None, events=self._rows(events)), 0, self._stop)

    def _finish(self) -> None:
        """Shutdown: every event held is journaled now, so no checkpoint needs a replay (the
        journal thread writes all of this in its last transaction)."""
        self._outbox.put_always(JournalWork("", None, events=self._rows(self.engine.flush())))
        if self._collective is not None:
            rows, states = self._collective.finish(time.monotonic(), int(self._wall() * 1_000_000))
            self._outbox.put_always(JournalWork("", None, events=rows, states=states))
        for key, checkpoint in self._checkpoints.items():
            if checkpoint.replay_from < checkpoint.offset:
                settled = replace(checkpoint, replay_from=checkpoint.offset)
                self._outbox.put_always(JournalWork(key, None, checkpoint=settled))
        self._outbox.put_always(END)

    def _mtimes(self) -> dict[Path, float]:
        times = {}
        for path in self._watched_files():
            try:
                times[path] = path.stat().st_mtime
            except OSError:
                times[path] = -1.0
        return times

    def _maybe_reload(self, forced: bool) -> None:
        if self._reload_rules is None:
            return
        current = self._mtimes()
        if not forced and current == self._rule_mtimes:
            return
        self._rule_mtimes = current
        problems = self.engine.reload(self._reload_rules)
        if problems:
            self._metrics.rule_reloads.labels("failed").inc()
            for problem in problems:
                log.error("rule reload: %s", problem)
            log.error("the rules were not reloaded; the rules in force keep running")
        else:
            self._metrics.rule_reloads.labels("ok").inc()
            log.info("rules reloaded: %d rules", len(self.engine.rules))
