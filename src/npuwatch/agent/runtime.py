"""The agent: built once from the configuration, then run until stopped.

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
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from npuwatch.agent.journal_stage import JournalStage, JournalTiming
from npuwatch.agent.profiling_figures import SavedFigures
from npuwatch.agent.profiling_stage import ImportSettings, ProfilingImporter
from npuwatch.agent.queue import ByteQueue, QueueStopped
from npuwatch.agent.reader import ReaderStage, ReaderTiming
from npuwatch.agent.rules_stage import END, JournalWork, RulesStage
from npuwatch.collector.discovery import FileFilter
from npuwatch.collector.npu_smi_command import split_command
from npuwatch.collector.npu_smi_poller import NpuSmiPoller, PollSettings
from npuwatch.collector.profiling_runs import ImportedRuns, RunTracker
from npuwatch.collector.roots import discover_roots
from npuwatch.collector.tailed_file import ReadBatch
from npuwatch.collector.tailer import FileGone, FileTailer, StopReading, TailSettings
from npuwatch.collector.watch import FileWatcher
from npuwatch.config import Config
from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.private_files import private_directory
from npuwatch.journal.store import Journal, JournalSettings
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers import LocalClock
from npuwatch.parsers.profiling.layout import find_profile_runs
from npuwatch.parsers.stream import ParseLimits
from npuwatch.parsers.telemetry import DEVICE_KIND, PROFILING_KIND
from npuwatch.parsers.timestamps import resolve_timezone
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import (
    DEFAULT_PACKS,
    SYSTEM_RULES,
    RuleSet,
    load_rules,
    rule_files,
)
from npuwatch.sinks.console_sink import ConsoleSink
from npuwatch.sinks.elasticsearch.dead_letters import DeadLetters
from npuwatch.sinks.elasticsearch.engine import SearchEngine
from npuwatch.sinks.elasticsearch.settings import (
    connection_from,
    dead_letter_path,
    ship_settings,
)
from npuwatch.sinks.elasticsearch.shipper import SearchShipper
from npuwatch.sinks.prometheus.device_metrics import DeviceMetrics
from npuwatch.sinks.prometheus.exporter import MetricsServer
from npuwatch.sinks.prometheus.log_metrics import LogMetrics
from npuwatch.sinks.prometheus.profiling_metrics import ProfilingMetrics
from npuwatch.sinks.prometheus.web_config import load_web_config

log = logging.getLogger("npuwatch.agent")


def rule_locations(config: Config) -> list[Path]:
    locations = [DEFAULT_PACKS] if config.rules.builtin else []
    if SYSTEM_RULES.is_dir():
        locations.append(SYSTEM_RULES)
    locations.extend(config.rules.paths)
    return locations


def tail_settings(config: Config, host: str) -> TailSettings:
    sources = config.sources
    return TailSettings(
        read_chunk_bytes=sources.read_chunk_bytes,
        max_open_files=sources.max_open_files,
        idle_flush_s=sources.idle_flush,
        idle_close_s=sources.idle_close,
        deleted_grace_s=sources.deleted_grace,
        fingerprint_bytes=sources.fingerprint_bytes,
        limits=ParseLimits(
            max_line_bytes=sources.max_line_bytes,
            max_record_lines=sources.max_record_lines,
            max_record_bytes=sources.max_record_bytes,
        ),
        host=host,
    )


class Agent:
    """Everything the agent runs, wired from one configuration."""

    def __init__(
        self,
        config: Config,
        environ: Mapping[str, str],
        console: TextIO | None = None,
        metrics: SelfMetrics | None = None,
    ) -> None:
        self.config = config
        self.environ = environ
        self.metrics = metrics or SelfMetrics()
        self.host = config.agent.host_name or socket.gethostname()
        self.roots = discover_roots(config.sources, environ)
        self._reading_stop = threading.Event()
        self._pipeline_stop = threading.Event()
        self._sink_stop = threading.Event()
        self._wake = threading.Event()
        state = config.agent.state_directory
        private_directory(state)  # 0700 whatever the umask: the journal holds whole log lines
        journal = config.journal
        self.journal = Journal(
            config.journal_path(),
            JournalSettings(
                max_age_s=journal.max_age,
                max_bytes=journal.max_bytes,
                segment_bytes=journal.segment_bytes,
                sync=journal.sync,
            ),
        )
        self.journal.open()
        self.metrics.journal_segments_quarantined.inc(self.journal.quarantined)
        half = max(config.sources.queue_bytes // 2, 1)
        self.read_queue: ByteQueue[object] = ByteQueue(half)
        self.journal_queue: ByteQueue[object] = ByteQueue(half)
        clock = LocalClock(resolve_timezone(config.agent.timezone))
        self.tailer = FileTailer(
            self.roots,
            FileFilter(config.sources.include, config.sources.exclude),
            tail_settings(config, self.host),
            clock,
            self.journal.checkpoints.values(),
            self._emit,
            self.metrics,
        )
        watcher = (
            FileWatcher(self.tailer.events, self._wake, self.metrics)
            if config.sources.watch
            else None
        )
        self.reader = ReaderStage(
            self.tailer,
            watcher,
            self._wake,
            ReaderTiming(rescan_interval_s=config.sources.rescan_interval),
            self._reading_stop,
            emit_at_stop=self._emit_at_stop,
        )
        self.rules = RulesStage(
            RuleEngine(self._load_rules()),
            self.read_queue,
            self.journal_queue,
            self._pipeline_stop,
            self.metrics,
            reload_rules=self._load_rules,
            watched_files=lambda: rule_files(rule_locations(self.config)),
            reload_interval_s=config.rules.reload_interval,
            idle_flush_s=config.sources.idle_flush,
        )
        self.journal_stage = JournalStage(
            self.journal,
            self.journal_queue,
            self.metrics,
            JournalTiming(commit_interval_s=journal.commit_interval),
            timezone_name=config.agent.timezone,
            give_up=self._pipeline_stop,
            log_metrics=LogMetrics(self.metrics.registry),
        )
        self.device_metrics = DeviceMetrics(self.metrics.registry)
        self.poller: NpuSmiPoller | None = None
        devices = config.devices
        if devices.enabled:
            self.poller = NpuSmiPoller(
                PollSettings(
                    tuple(split_command(devices.npu_smi_command)),
                    interval_s=devices.interval,
                    timeout_s=devices.timeout,
                ),
                self.device_metrics,
                self.metrics,
                self._journal_device_records if devices.journal else None,
                self._reading_stop,
            )
        self.profiling_metrics = ProfilingMetrics(
            self.metrics.registry, top=config.profiling.top_operator_types
        )
        self.importer: ProfilingImporter | None = None
        profiling = config.profiling
        if profiling.paths:
            self.importer = ProfilingImporter(
                ImportSettings(tuple(profiling.paths), scan_interval_s=profiling.scan_interval),
                RunTracker(
                    find_profile_runs,
                    ImportedRuns(state / "profiling-imported.json"),
                    settle_s=profiling.settle,
                ),
                self.profiling_metrics,
                self.metrics,
                self._journal_profiling_records if profiling.journal else None,
                self._reading_stop,
                saved=SavedFigures(state / "profiling-figures.json"),
            )
        self.metrics_server: MetricsServer | None = None
        exporter = config.sinks.prometheus
        if exporter.enabled:
            security = (
                load_web_config(exporter.web_config_file)
                if exporter.web_config_file is not None
                else None
            )
            self.metrics_server = MetricsServer(self.metrics.registry, exporter.listen, security)
        self.sinks: list[ConsoleSink | SearchShipper] = []
        cursors = CursorStore(state / "cursors.json")
        console_config = config.sinks.console
        if console is not None or console_config.enabled:
            self.sinks.append(
                ConsoleSink(
                    config.journal_path(),
                    cursors,
                    self.journal_stage.committed,
                    self._sink_stop,
                    console if console is not None else _stdout(),
                    console_config.format,
                    console_config.events_only,
                )
            )

        search = config.sinks.elasticsearch
        if search.enabled:
            self.sinks.append(
                SearchShipper(
                    SearchEngine(connection_from(search, environ)),
                    config.journal_path(),
                    cursors,
                    self.journal_stage.committed,
                    self._sink_stop,
                    self.metrics,
                    DeadLetters(dead_letter_path(search, state)),
                    ship_settings(search, self.host),
                )
            )

    def _load_rules(self) -> RuleSet:
        return load_rules(rule_locations(self.config))

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
        command = self.config.devices.npu_smi_command
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

    def _journal_entries(self, key: str, source: SourceInfo, records: list[Record]) -> None:
        """Telemetry entries (no file offsets to commit) straight to the journal thread."""
        size = sum(len(record.original) for record in records)
        work = JournalWork(key, source, records, size=size)
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
            *(sink.thread for sink in self.sinks),
        ]

    def start(self) -> None:
        if self.metrics_server is not None:
            try:
                self.metrics_server.start()
            except OSError as error:
                # Metrics are how the agent is watched, not what it is for: keep following the
                # logs; Prometheus shows the target down and the agent-down alert fires.
                log.error("%s: metrics are not served (set [sinks.prometheus] listen)", error)
                self.metrics_server = None
        self.journal_stage.start()
        if self.poller is not None:
            self.poller.start()
        if self.importer is not None:
            self.importer.start()
        self.rules.start()
        for sink in self.sinks:
            sink.start()
        self.reader.start()

    def wait_started(self, timeout: float) -> bool:
        return self.reader.started.wait(timeout)

    def reload(self, config: Config) -> None:
        """Apply a new configuration: rules and sources now; the rest needs a restart."""
        old = self.config
        self.config = config
        roots = discover_roots(config.sources, self.environ)
        wanted = FileFilter(config.sources.include, config.sources.exclude)

        def apply(tailer: FileTailer) -> None:
            tailer.roots = roots
            tailer.wanted = wanted

        self.reader.change(apply)
        self.rules.request_reload()
        for section in ("agent", "journal", "sinks"):
            if getattr(old, section) != getattr(config, section):
                log.warning("configuration [%s] changed: restart the agent to apply it", section)

    def stop(self, timeout: float | None = None) -> bool:
        """Drain and stop; True when everything was committed within the time."""
        deadline = time.monotonic() + (
            self.config.agent.drain_timeout if timeout is None else timeout
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
        for telemetry in (self.poller, self.importer):
            if telemetry is not None and telemetry.thread.is_alive():
                telemetry.thread.join(min(_left(deadline), 1.0))
        self.read_queue.put_always(END)
        self.rules.thread.join(_left(deadline))
        self.journal_stage.thread.join(_left(deadline))
        drained = not (self.rules.thread.is_alive() or self.journal_stage.thread.is_alive())
        if not drained:
            self._pipeline_stop.set()  # the journal stops retrying; what is left is read again
        self._sink_stop.set()
        for sink in self.sinks:
            sink.thread.join(_left(deadline) + 1)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if drained:
            self.journal.close()
        else:
            log.error("could not drain within the stop timeout; the rest is read again at start")
        return drained


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _stdout() -> TextIO:
    import sys  # noqa: PLC0415 - looked up at use, so that tests can replace it

    return sys.stdout
