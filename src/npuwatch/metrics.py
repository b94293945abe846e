"""The agent's own metrics, all defined here, on a registry passed in (never the global one).

Names follow the Prometheus guide: base units (seconds, bytes), `_total` on counters, and only
labels with a small fixed set of values (a level, a severity, a reason) — never a path or a pid.
The next hop (`/metrics`) exposes whatever registry the agent built.
"""

from __future__ import annotations

import threading
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector

from npuwatch import __version__
from npuwatch.speedups import Speedups, speedups

SourceProblemReason = Literal[
    "unreadable", "not_regular_file", "link_not_followed", "vanished", "watch_failed"
]
"""The reasons `source_problems` counts (a fixed set, so the label stays bounded)."""


class SelfMetrics:
    """Every metric the agent keeps about itself."""

    def __init__(
        self, registry: CollectorRegistry | None = None, speedups_in_use: Speedups | None = None
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        speedups_in_use = speedups_in_use if speedups_in_use is not None else speedups()
        self.lines_read = Counter("npuwatch_lines_read", "Log lines read from files.", registry=r)
        self.bytes_read = Counter("npuwatch_read_bytes", "Bytes read from log files.", registry=r)
        self.records = Counter(
            "npuwatch_records", "Records journaled, by log level.", ["level"], registry=r
        )
        self.events = Counter(
            "npuwatch_events", "Rule events journaled, by severity.", ["severity"], registry=r
        )
        self.files_followed = Gauge("npuwatch_files_followed", "Files being followed.", registry=r)
        self.files_open = Gauge("npuwatch_files_open", "Followed files held open.", registry=r)
        self.files_deleted_unread = Counter(
            "npuwatch_files_deleted_unread",
            "Files deleted (by CANN's rotation or anyone) before they were read to the end.",
            registry=r,
        )
        self.bytes_deleted_unread = Counter(
            "npuwatch_deleted_unread_bytes",
            "Bytes known to be lost in files deleted before they were read.",
            registry=r,
        )
        self.files_deleted_while_stopped = Counter(
            "npuwatch_files_deleted_while_stopped",
            "Files followed before the agent stopped and gone when it started again: what they "
            "gained while it was stopped, if anything, is not known (logged at start).",
            registry=r,
        )
        self.source_problems = Counter(
            "npuwatch_source_problems",
            "Files or folders skipped: unreadable, not a regular file, vanished, not watched.",
            ["reason"],
            registry=r,
        )
        self.read_lag = Gauge(
            "npuwatch_read_lag_seconds",
            "How long the oldest unread bytes of any file have been waiting to be read.",
            registry=r,
        )
        self.queue_bytes = Gauge(
            "npuwatch_queue_bytes", "Bytes read but not yet journaled.", registry=r
        )
        self.queue_fill = Gauge(
            "npuwatch_queue_fill_ratio", "Fill of the read queue, 0 to 1.", registry=r
        )
        self.journal_bytes = Gauge(
            "npuwatch_journal_bytes", "Size of the journal on disk.", registry=r
        )
        self.journal_age = Gauge(
            "npuwatch_journal_age_seconds",
            "Age of the oldest journal segment (what retention by age looks at).",
            registry=r,
        )
        self.checkpoint_age = Gauge(
            "npuwatch_checkpoint_age_seconds",
            "Time since the journal last committed a batch and its offsets.",
            registry=r,
        )
        self.journal_unavailable = Gauge(
            "npuwatch_journal_unavailable",
            "1 while the journal cannot be written (disk full): reading pauses, nothing is lost.",
            registry=r,
        )
        self.journal_commit_failures = Counter(
            "npuwatch_journal_commit_failures", "Journal commits that failed.", registry=r
        )
        self.journal_segments_quarantined = Counter(
            "npuwatch_journal_segments_quarantined",
            "Journal segments found unreadable and moved aside.",
            registry=r,
        )
        self.journal_segments_deleted = Counter(
            "npuwatch_journal_segments_deleted",
            "Journal segments removed by retention.",
            registry=r,
        )
        self.rule_reloads = Counter(
            "npuwatch_rule_reloads", "Rule set reloads, by result.", ["result"], registry=r
        )
        self.shipped = Counter(
            "npuwatch_shipped",
            "Journal entries sent to a sink, by result: ok, duplicate (already there: a "
            "replay), dead_letter (refused for good), below_min_level (kept in the journal "
            "only, by the sink's min_level).",
            ["sink", "result"],
            registry=r,
        )
        self.dead_letters = Counter(
            "npuwatch_dead_letters",
            "Documents a sink refused for good, written to its dead-letter file.",
            ["sink"],
            registry=r,
        )
        self.ship_retries = Counter(
            "npuwatch_ship_retries",
            "Documents sent again after a 429, a 5xx or a transport failure.",
            ["sink"],
            registry=r,
        )
        self.last_shipment = Gauge(
            "npuwatch_last_shipment_timestamp_seconds",
            "When a sink last had a whole page accepted (Unix time).",
            ["sink"],
            registry=r,
        )
        self.ship_backlog = Gauge(
            "npuwatch_ship_backlog_seconds",
            "How long a sink has had journal entries waiting to be shipped (0 when caught up).",
            ["sink"],
            registry=r,
        )
        self.watching = Gauge(
            "npuwatch_watch_active",
            "1 while file events (inotify) wake the reader; 0 when only the rescan finds changes.",
            registry=r,
        )

        self.npu_smi_polls = Counter(
            "npuwatch_npu_smi_polls",
            "Runs of npu-smi by result: ok, failed (non-zero exit, timeout, no output), "
            "unreadable (output without a single chip row).",
            ["result"],
            registry=r,
        )
        # Registered by `npu_smi_polled`, at the first poll that found npu-smi: a host where
        # nothing polls (no driver, or [devices] off) must not export `npuwatch_npu_smi_up 0`,
        # which NpuwatchNpuSmiFailing reads as a driver in trouble.
        self.npu_smi_up = Gauge(
            "npuwatch_npu_smi_up",
            "1 when the last npu-smi poll gave device readings, 0 when it failed (absent while "
            "polling is disabled or npu-smi is not installed).",
            registry=None,
        )
        self.npu_smi_last_success = Gauge(
            "npuwatch_npu_smi_last_success_timestamp_seconds",
            "When npu-smi last gave device readings (Unix time).",
            registry=None,
        )
        self._npu_smi_exported = False
        self._npu_smi_lock = threading.Lock()

        self.profiling_runs = Counter(
            "npuwatch_profiling_runs",
            "Profiling runs found complete and imported, by result: ok, empty (no operators "
            "or steps), failed (unreadable; tried again when its files change).",
            ["result"],
            registry=r,
        )
        build_info = Gauge(
            "npuwatch_build_info",
            "The agent's version and whether its C speedups are on (speedups: c, python, "
            "partial), as labels (always 1): a fleet dashboard finds the hosts on the slow path.",
            ["version", "speedups"],
            registry=r,
        )
        build_info.labels(__version__, speedups_in_use.label).set(1)
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds: the agent
        # runs next to training jobs, so its own footprint is something operators watch.
        ProcessCollector(registry=r)

    def npu_smi_polled(self, up: bool, wall: float) -> None:
        """Record one poll of npu-smi that found the program (answered or failed)."""
        with self._npu_smi_lock:
            if not self._npu_smi_exported:
                self.registry.register(self.npu_smi_up)
                self.registry.register(self.npu_smi_last_success)
                self._npu_smi_exported = True
        self.npu_smi_up.set(1 if up else 0)
        if up:
            self.npu_smi_last_success.set(wall)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """The current value of a sample by its exposed name (for tests and the status line)."""
        result = self.registry.get_sample_value(name, labels or {})
        return 0.0 if result is None else result
