"""The profiling importer: complete profiling runs under the configured folders, into the journal
and the ascend_op_* / ascend_profiling_* gauges.

A thread of its own that wakes every `scan_interval`: reading a run takes a second or more,
which the log pipeline must never wait for. The run is read by a child process
(`profiling_digest`), so the agent never loads pandas nor keeps the memory a big run takes.

Each run (one per rank or device: a run holding several devices is split) gives one journal
entry per operator, summed over the run (`ascend.profiling`: name, type, core, launches, total,
mean, min and max time), shipped to logs-ascend.profiling-<namespace>; and gauges of its device
(see sinks/prometheus/profiling_metrics.py). A run that cannot be read is logged once and left
until its files change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from npuwatch.agent.periodic import Periodic
from npuwatch.agent.profiling_digest import RunDigest, digests_in_child
from npuwatch.agent.profiling_figures import SavedFigures
from npuwatch.child_process import ChildStopped
from npuwatch.collector.finished_outputs import OutputState, OutputTracker, Signature
from npuwatch.collector.profiling_runs import PROFILING
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.telemetry import profiling_records
from npuwatch.records import Record
from npuwatch.sinks.prometheus.profiling_metrics import (
    OperatorTypeFigures,
    ProfilingMetrics,
    RunFigures,
)

log = logging.getLogger(__name__)

Deliver = Callable[[str, Path, int | None, list[Record]], None]
"""Where the operator records of one run go: (entry key, run folder, device, records)."""


@dataclass(frozen=True)
class ImportSettings:
    roots: tuple[Path, ...]
    scan_interval_s: float = 30.0


class ProfilingImporter:
    """Finds complete runs, reads them, and hands their operators and figures on."""

    def __init__(
        self,
        settings: ImportSettings,
        tracker: OutputTracker,
        profiling_metrics: ProfilingMetrics,
        metrics: SelfMetrics,
        deliver: Deliver | None,
        stop: threading.Event,
        load: Callable[[Path], Sequence[RunDigest]] = digests_in_child,
        wall: Callable[[], float] = time.time,
        saved: SavedFigures | None = None,
    ) -> None:
        self.settings = settings
        self._tracker = tracker
        self._profiling_metrics = profiling_metrics
        self._metrics = metrics
        self._deliver = deliver
        self._stop = stop
        self._load = load
        self._wall = wall
        self._saved = saved
        if saved is not None:  # the gauges of the runs imported before a restart
            for figures in saved.load():
                profiling_metrics.restore(figures)
        self._periodic = Periodic(
            "npuwatch-profiling",
            self.scan,
            settings.scan_interval_s,
            stop,
            "looking for profiling runs failed",
        )
        self.thread = self._periodic.thread

    def start(self) -> None:
        self._periodic.start()

    def scan(self) -> int:
        """Import every run that is ready now; the number imported."""
        imported = 0
        ready, _ = self._tracker.ready(self.settings.roots, self._wall())
        for output, signature in ready:
            if self._stop.is_set():
                break
            try:
                if self._import(output.path, signature):
                    imported += 1
            except ChildStopped:
                break  # the agent is stopping: nothing is recorded, the next start reads it
            self._tracker.done(output.path, OutputState(PROFILING, signature))
        return imported

    def _import(self, folder: Path, signature: Signature) -> bool:
        try:
            runs = self._load(folder)
        except ChildStopped:
            raise
        except Exception as error:  # any unreadable run: say so, keep going
            self._metrics.profiling_runs.labels("failed").inc()
            log.warning(
                "profiling run %s cannot be read (%s); it is tried again when its files change",
                folder,
                error,
            )
            return False
        if not runs:
            self._metrics.profiling_runs.labels("empty").inc()
            log.warning("profiling run %s has no operators or steps to import", folder)
            return False
        for run in runs:
            self._import_run(folder, signature, run)
        if self._saved is not None:
            self._saved.save(self._profiling_metrics.latest())
        self._metrics.profiling_runs.labels("ok").inc()
        for problem in runs[0].problems[:1]:  # the rest are in `npuwatch profile summary`
            log.warning("profiling run %s: %s", folder, problem)
        log.info("imported profiling run %s (%s)", folder, ", ".join(r.label for r in runs))
        return True

    def _import_run(self, folder: Path, signature: Signature, run: RunDigest) -> None:
        by_type: dict[str, list[float]] = {}
        for row in run.operators:
            figures = by_type.setdefault(str(row.get("op_type") or "unknown"), [0, 0.0])
            figures[0] += int(row.get("count") or 0)
            figures[1] += float(row.get("total_us") or 0.0)
        self._profiling_metrics.update(
            RunFigures(
                device="unknown" if run.device is None else str(run.device),
                operator_types=[
                    OperatorTypeFigures(op_type, int(count), total_us / 1e6)
                    for op_type, (count, total_us) in by_type.items()
                ],
                step_time_s=None if run.step_us is None else run.step_us / 1e6,
                aicore_ratio=run.aicore_ratio,
                imported_at_s=self._wall(),
            )
        )
        if self._deliver is not None:
            # When the run was taken: its first kernel, else when its files were last written.
            when_us = run.first_start_us or signature.newest_ns // 1000
            records = profiling_records(run.operators, folder.name, run.device, when_us)
            key = f"{folder}#{'' if run.device is None else run.device}@{signature.newest_ns}"
            self._deliver(key, folder, run.device, records)
