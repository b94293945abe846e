"""The profiling importer: complete profiling runs under the configured folders, into the journal
and the ascend_op_* / ascend_profiling_* gauges.

A thread of its own that wakes every `scan_interval`: reading a run takes pandas and a second
or two, which the log pipeline must never wait for. pandas is imported with the first run, so
an agent with no profiling folder (or no run yet) never loads it.

Each run (one per rank or device: a run holding several devices is split) gives one journal
entry per operator, summed over the run (`ascend.profiling`: name, type, core, launches, total,
mean, min and max time), shipped to logs-ascend.profiling-<namespace>; and gauges of its device
(see sinks/prometheus/profiling_metrics.py). A run that cannot be read is logged once and left
until its files change.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.collector.profiling_runs import RunTracker, Signature
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.telemetry import profiling_records
from npuwatch.records import Record
from npuwatch.sinks.prometheus.profiling_metrics import (
    OperatorTypeFigures,
    ProfilingMetrics,
    RunFigures,
)

if TYPE_CHECKING:
    from npuwatch.parsers.profiling import ProfileRun

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
        tracker: RunTracker,
        profiling_metrics: ProfilingMetrics,
        metrics: SelfMetrics,
        deliver: Deliver | None,
        stop: threading.Event,
        load: Callable[[Path], Sequence[ProfileRun]] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._tracker = tracker
        self._profiling_metrics = profiling_metrics
        self._metrics = metrics
        self._deliver = deliver
        self._stop = stop
        self._load = load
        self._wall = wall
        self.thread = threading.Thread(target=self._loop, name="npuwatch-profiling", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except Exception:  # a bug here must not end profiling imports for good
                log.exception("looking for profiling runs failed; trying again next interval")
            self._stop.wait(self.settings.scan_interval_s)

    def scan(self) -> int:
        """Import every run that is ready now; the number imported."""
        imported = 0
        for run, signature in self._tracker.ready(self.settings.roots, self._wall()):
            if self._stop.is_set():
                break
            if self._import(run, signature):
                imported += 1
            self._tracker.done(run, signature)
        return imported

    def _import(self, folder: Path, signature: Signature) -> bool:
        try:
            runs = self._loader()(folder)
        except Exception as error:  # any unreadable run: say so, keep going
            self._metrics.profiling_runs.labels("failed").inc()
            log.warning(
                "profiling run %s cannot be read (%s: %s); it is tried again when its files change",
                folder,
                type(error).__name__,
                error,
            )
            return False
        runs = [run for run in runs if run.has_data]
        if not runs:
            self._metrics.profiling_runs.labels("empty").inc()
            log.warning("profiling run %s has no operators or steps to import", folder)
            return False
        for run in runs:
            self._import_run(folder, signature, run)
        self._metrics.profiling_runs.labels("ok").inc()
        for problem in runs[0].problems[:1]:  # the rest are in `npuwatch profile summary`
            log.warning("profiling run %s: %s", folder, problem)
        log.info("imported profiling run %s (%s)", folder, ", ".join(r.label for r in runs))
        return True

    def _import_run(self, folder: Path, signature: Signature, run: ProfileRun) -> None:
        from npuwatch.analysis.profile_steps import rank_steps  # noqa: PLC0415 - pandas
        from npuwatch.parsers.profiling import operator_table  # noqa: PLC0415 - pandas

        table = operator_table(run)
        device = run.device_id if run.device_id is not None else run.rank
        steps = rank_steps(run, run.label)
        by_type = table.groupby("op_type", sort=False)[["count", "total_us"]].sum()
        self._profiling_metrics.update(
            RunFigures(
                device="unknown" if device is None else str(device),
                operator_types=[
                    OperatorTypeFigures(str(op_type) or "unknown", int(count), float(total) / 1e6)
                    for op_type, count, total in zip(
                        by_type.index, by_type["count"], by_type["total_us"], strict=True
                    )
                ],
                step_time_s=None if steps is None else steps.step_us / 1e6,
                aicore_ratio=_cube_utilization(run),
                imported_at_s=self._wall(),
            )
        )
        if self._deliver is not None:
            when_us = _run_time_us(run, signature)
            records = profiling_records(table.to_dict("records"), folder.name, device, when_us)
            key = f"{folder}#{'' if device is None else device}@{signature.newest_ns}"
            self._deliver(key, folder, device, records)

    def _loader(self) -> Callable[[Path], Sequence[ProfileRun]]:
        if self._load is None:
            from npuwatch.parsers.profiling import load_profiles  # noqa: PLC0415 - pandas

            self._load = load_profiles
        return self._load


def _cube_utilization(run: ProfileRun) -> float | None:
    """msprof's cube_utilization(%) of the AI Core kernels, weighted by their duration, 0 to 1
    (None when the run was profiled without the PipeUtilization metrics that carry it)."""
    kernels = run.kernels
    if "cube_utilization_pct" not in kernels.columns:
        return None
    known = kernels[kernels["cube_utilization_pct"].notna() & kernels["duration_us"].notna()]
    weight = float(known["duration_us"].sum())
    if known.empty or weight <= 0:
        return None
    weighted = float((known["cube_utilization_pct"] * known["duration_us"]).sum())
    return weighted / weight / 100


def _run_time_us(run: ProfileRun, signature: Signature) -> int:
    """When the run was taken: its first kernel, else when its files were last written."""
    if "start_us" in run.kernels.columns:
        first = float(run.kernels["start_us"].min())
        if not math.isnan(first) and first > 0:
            return int(first)
    return signature.newest_ns // 1000
