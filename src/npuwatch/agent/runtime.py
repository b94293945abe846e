"""The agent: made once from its topology (topology.py), then run until stopped.

Three worker threads, joined by queues bounded in bytes:

    reader (tail + parse)  →  rules (events)  →  journal (group commits)  →  sinks (cursors)

Stopping drains in that order: the reader stops reading and hands on the records it was still
assembling (a partial line is not committed, so a restart reads it again), the rules thread hands
on every event it holds, the journal commits the rest, and the sinks print what was committed.
Within `drain_timeout`; past it the agent leaves anyway, which is safe because a commit is one
SQLite transaction.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from npuwatch import __version__
from npuwatch.agent.collective_stage import CollectiveWatch, JournalStates
from npuwatch.agent.debug_digest import digest_in_child
from npuwatch.agent.debug_stage import DebugImporter, rule_events
from npuwatch.agent.journal_stage import JournalStage
from npuwatch.agent.profiling_digest import digests_in_child
from npuwatch.agent.profiling_figures import SavedFigures
from npuwatch.agent.profiling_stage import ImportSettings, ProfilingImporter
from npuwatch.agent.queue import ByteQueue, QueueStopped
from npuwatch.agent.reader import ReaderStage, ReaderTiming
from npuwatch.agent.rules_stage import END, RulesStage
from npuwatch.agent.topology import SectionChange, Topology, changes
from npuwatch.collector.debug_outputs import output_tracker
from npuwatch.collector.npu_smi_command import run_npu_smi
from npuwatch.collector.npu_smi_poller import NpuSmiPoller
from npuwatch.collector.profiling_runs import run_tracker
from npuwatch.collector.tailed_file import ReadBatch
from npuwatch.collector.tailer import FileGone, FileTailer, StopReading
from npuwatch.collector.watch import FileWatcher
from npuwatch.handoff import EventRow, JournalWork
from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.store import Journal
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.telemetry import DEVICE_KIND, PROFILING_KIND
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.private_files import private_directory
from npuwatch.problems import Problems
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import RuleSet, load_rules, rule_files
from npuwatch.sinks.follower import JournalFollower
from npuwatch.sinks.prometheus.debug_metrics import DebugMetrics
from npuwatch.sinks.prometheus.device_metrics import DeviceMetrics
from npuwatch.sinks.prometheus.exporter import MetricsServer
from npuwatch.sinks.prometheus.log_metrics import LogMetrics
from npuwatch.sinks.prometheus.profiling_metrics import ProfilingMetrics
from npuwatch.state_lock import hold_state_directory

log = logging.getLogger("npuwatch.agent")


class Agent:
    """Everything the agent runs, made from its topology (see topology.py)."""

    def __init__(self, topology: Topology, metrics: SelfMetrics | None = None) -> None:
        self.topology = topology
        self._started_with = topology.config
        self.metrics = metrics or SelfMetrics()
        self.host = topology.host
        self.roots = list(topology.sources.roots)
        self._reading_stop = threading.Event()
        self._pipeline_stop = threading.Event()
        self._sink_stop = threading.Event()
        self._wake = threading.Event()
        private_directory(topology.state_directory)  # 0700: the journal holds whole log lines
        self._state_lock = hold_state_directory(topology.state_directory)  # one agent a folder
        self.journal = Journal(topology.journal.directory, topology.journal.settings)
        try:
            self.journal.open()
        except BaseException:  # a full disk (JournalUnavailable): the caller waits for room
            self._state_lock.release()
            raise
        self.metrics.journal_segments_quarantined.inc(self.journal.quarantined)
        sources = topology.sources
        half = max(sources.queue_bytes // 2, 1)
        self.read_queue: ByteQueue[object] = ByteQueue(half)
        self.journal_queue: ByteQueue[object] = ByteQueue(half)
        self.tailer = FileTailer(
            self.roots,
            sources.wanted,
            sources.tail,
            LocalClock(resolve_timezone(topology.timezone)),
            self.journal.checkpoints.values(),
            self._emit,
            self.metrics,
            links=sources.links,
        )
        watcher = (
            FileWatcher(self.tailer.events, self._wake, self.metrics) if sources.watch else None
        )
        self.reader = ReaderStage(
            self.tailer,
            watcher,
            self._wake,
            ReaderTiming(rescan_interval_s=sources.rescan_interval_s),
            self._reading_stop,
            emit_at_stop=self._emit_at_stop,
        )
        self._rule_locations = topology.rules.locations
        self._ruleset = topology.rules.ruleset
        """The rule set in force (the rules thread replaces it at a reload), for the rules the
        debugging-tools importer runs over its entries."""
        # A damaged journal segment is named once, not once by each of its readers.
        damage = DamageNotice(log.warning)
        self._journal_states = JournalStates(topology.journal.directory, damage)
        collective = (
            CollectiveWatch(
                topology.host, __version__, topology.collective.settings, self._journal_states
            )
            if topology.collective is not None
            else None
        )
        self.rules = RulesStage(
            RuleEngine(topology.rules.ruleset),
            self.read_queue,
            self.journal_queue,
            self._pipeline_stop,
            self.metrics,
            reload_rules=self._load_rules,
            watched_files=lambda: rule_files(self._rule_locations),
            reload_interval_s=topology.rules.reload_interval_s,
            idle_flush_s=sources.tail.idle_flush_s,
            collective=collective,
        )
        self.journal_stage = JournalStage(
            self.journal,
            self.journal_queue,
            self.metrics,
            topology.journal.timing,
            timezone_name=topology.timezone,
            give_up=self._pipeline_stop,
            observers=(LogMetrics(self.metrics.registry),),
        )
        self.poller = self._poller(topology)
        self.importer = self._importer(topology)
        self.debug_importer = self._debug_importer(topology)
        exporter = topology.exporter
        self.metrics_server = (
            MetricsServer(self.metrics.registry, exporter.listen, exporter.security)
            if exporter is not None
            else None
        )
        cursors = CursorStore(topology.state_directory / "cursors.json")
        self.followers = [
            JournalFollower(
                plan.open(self.metrics),
                topology.journal.directory,
                cursors,
                self.journal_stage.committed,
                self._sink_stop,
                self.metrics,
                notice=damage,
            )
            for plan in topology.sinks
        ]

    def _poller(self, topology: Topology) -> NpuSmiPoller | None:
        devices = topology.devices
        readings = DeviceMetrics(self.metrics.registry)
        if devices is None:
            return None
        journal = self._journal_device_records if devices.journal else None
        stop = self._reading_stop  # a stop kills an npu-smi that hangs on its device

        def run(command: Sequence[str], timeout_s: float) -> str:
            return run_npu_smi(command, timeout_s, stop=stop)

        return NpuSmiPoller(devices.poll, readings, self.metrics, journal, stop, run=run)

    def _importer(self, topology: Topology) -> ProfilingImporter | None:
        profiling = topology.profiling
        figures = ProfilingMetrics(self.metrics.registry, top=profiling.top_operator_types)
        if not profiling.folders:
            return None
        state = topology.state_directory
        return ProfilingImporter(
            ImportSettings(profiling.folders, scan_interval_s=profiling.scan_interval_s),
            run_tracker(state / "profiling-imported.json", profiling.settle_s),
            figures,
            self.metrics,
            self._journal_profiling_records if profiling.journal else None,
            self._reading_stop,
            load=lambda folder: digests_in_child(folder, stop=self._reading_stop),
            saved=SavedFigures(state / "profiling-figures.json"),
        )

    def _debug_importer(self, topology: Topology) -> DebugImporter | None:
        plan = topology.debug_tools
        state = topology.state_directory
        figures = DebugMetrics(self.metrics.registry)
        tracker = output_tracker(state / "debug-imported.json", plan.settle_s)
        importer = DebugImporter(
            plan,
            tracker,
            figures,
            self.host,
            self._journal_debug_entries,
            self._reading_stop,
            events=rule_events(lambda: self._ruleset),
            load=lambda kind, path: digest_in_child(kind, path, stop=self._reading_stop),
        )
        # Without folders nothing is imported, but the metrics still show what was (restored
        # by the importer from its state file).
        return importer if plan.folders else None

    def _load_rules(self) -> RuleSet:
        ruleset = load_rules(self._rule_locations)
        self._ruleset = ruleset
        return ruleset

    def _emit(self, item: ReadBatch | FileGone) -> None:
        size = len(item.raw or b"") if isinstance(item, ReadBatch) else 0
        try:
            self.read_queue.put(item, size, self._reading_stop)
        except QueueStopped as stopped:
            raise StopReading from stopped
        queued = self.read_queue.bytes + self.journal_queue.bytes
        self.metrics.queue_bytes.set(queued)
        self.metrics.queue_fill.set(min(queued / (2 * self.read_queue.max_bytes), 1.0))

    def _emit_at_stop(self, item: ReadBatch | FileGone) -> None:
        """The reader's last records when it stops: they wait for room unless the drain is
        abandoned (see `stop`)."""
        size = len(item.raw or b"") if isinstance(item, ReadBatch) else 0
        try:
            self.read_queue.put(item, size, self._pipeline_stop)
        except QueueStopped as stopped:
            raise StopReading from stopped

    def _journal_device_records(self, records: list[Record]) -> None:
        # One stream per NPU, so that the journal's per-block device answers `grep --device`.
        assert self.topology.devices is not None  # only the poller journals readings
        command = self.topology.devices.command_text
        by_npu: dict[int | None, list[Record]] = {}
        for record in records:
            by_npu.setdefault(record.device, []).append(record)
        for npu, readings in by_npu.items():
            source = SourceInfo(path=command, host=self.host, kind=DEVICE_KIND, device=npu)
            self._journal_entries(f"{DEVICE_KIND}@{self.host}#{npu}", source, readings)

    def _journal_profiling_records(
        self, key: str, folder: Path, device: int | None, records: list[Record]
    ) -> None:
        source = SourceInfo(path=str(folder), host=self.host, kind=PROFILING_KIND, device=device)
        self._journal_entries(f"{PROFILING_KIND}@{self.host}:{key}", source, records)

    def _journal_debug_entries(
        self, key: str, source: SourceInfo, records: list[Record], events: list[EventRow]
    ) -> None:
        self._journal_entries(key, source, records, events)

    def _journal_entries(
        self,
        key: str,
        source: SourceInfo,
        records: list[Record],
        events: list[EventRow] | None = None,
    ) -> None:
        """Telemetry entries (no file offsets to commit) straight to the journal thread."""
        size = sum(len(record.original) for record in records)
        work = JournalWork(key, source, records, events=events or [], size=size)
        # Stopping: a device reading is a snapshot (the next start takes a new one), and a
        # profiling run not yet written is imported again at the next start.
        with contextlib.suppress(QueueStopped):
            self.journal_queue.put(work, size, self._reading_stop)

    @property
    def workers(self) -> list[threading.Thread]:
        """The threads that must all be alive for the agent to be healthy."""
        return [
            self.reader.thread,
            self.rules.thread,
            self.journal_stage.thread,
            *(follower.thread for follower in self.followers),
        ]

    def start(self) -> None:
        """Start every thread; Problems, with nothing started and the state directory let go,
        when the metrics address cannot be bound: an agent running without /metrics is an agent
        no one watches (its alerts never fire), after `config check` said all was well."""
        if self.metrics_server is not None:
            try:
                self.metrics_server.start()
            except OSError as error:
                self.journal.close()
                self._state_lock.release()
                raise Problems(
                    [
                        f"{error.strerror or error}: another process listens there "
                        "(`ss -ltnp`); set [sinks.prometheus] listen to a free address, or "
                        "enabled = false"
                    ]
                ) from None
        self.journal_stage.start()
        if self.poller is not None:
            self.poller.start()
        if self.importer is not None:
            self.importer.start()
        if self.debug_importer is not None:
            self.debug_importer.start()
        self.rules.start()
        for follower in self.followers:
            follower.start()
        self.reader.start()

    def wait_started(self, timeout: float) -> bool:
        return self.reader.started.wait(timeout)

    def reload(self, topology: Topology) -> list[SectionChange]:
        """Take up a new topology: the files followed and the rules now; what else changed
        since the start waits for a restart (the list says which)."""
        applied = [c for c in changes(self.topology.config, topology.config) if c.applied]
        waiting = [c for c in changes(self._started_with, topology.config) if not c.applied]
        self.topology = topology
        roots, wanted = list(topology.sources.roots), topology.sources.wanted

        def apply(tailer: FileTailer) -> None:
            tailer.roots = roots
            tailer.wanted = wanted

        self.roots = roots
        self.reader.change(apply)
        self._rule_locations = topology.rules.locations
        self.rules.request_reload()  # the packs are read again, changed or not
        return applied + waiting

    def stop(self, timeout: float | None = None) -> bool:
        """Drain and stop; True when everything was committed within the time."""
        deadline = time.monotonic() + (
            self.topology.drain_timeout_s if timeout is None else timeout
        )
        self._reading_stop.set()
        self._wake.set()
        self.reader.thread.join(_left(deadline))
        if self.reader.thread.is_alive():
            # Its last records found no room in time: abandon the drain (nothing is committed
            # out of order; the rest is read again at the next start).
            self._pipeline_stop.set()
        # Not for long: a hung npu-smi or a big run being read must not hold the drain; a
        # reading is a snapshot, and a run not yet journaled is imported at the next start.
        for telemetry in (self.poller, self.importer, self.debug_importer):
            if telemetry is not None and telemetry.thread.is_alive():
                telemetry.thread.join(min(_left(deadline), 1.0))
        self.read_queue.put_always(END)
        self.rules.thread.join(_left(deadline))
        self.journal_stage.thread.join(_left(deadline))
        drained = not (self.rules.thread.is_alive() or self.journal_stage.thread.is_alive())
        if not drained:
            self._pipeline_stop.set()  # the journal stops retrying; what is left is read again
        self._sink_stop.set()
        for follower in self.followers:
            follower.thread.join(_left(deadline) + 1)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if drained:
            self.journal.close()
            self._state_lock.release()
        else:  # (threads may still write: the lock goes with the process)
            log.error("could not drain within the stop timeout; the rest is read again at start")
        return drained

    def abandon(self, timeout: float = 10.0) -> None:
        """Leave without draining, as a killed agent would as far as threads can: every thread
        stops where it is, nothing more is committed, and the next start reads again from the
        last commit (what RELIABILITY's crash scenarios rely on)."""
        self._reading_stop.set()
        self._pipeline_stop.set()
        self._sink_stop.set()
        self._wake.set()
        for thread in self.workers:
            thread.join(timeout)
        if self.metrics_server is not None:  # a killed process's socket closes with it
            self.metrics_server.stop()
        self.journal.close()
        self._state_lock.release()


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)
