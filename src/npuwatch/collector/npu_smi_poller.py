"""The npu-smi poller: every `interval`, one `npu-smi info`, parsed into gauges and journal entries.

A thread of its own, because npu-smi takes a second or more on a busy 8-card host and can hang
with the device; nothing else waits for it. Absent npu-smi (a host without the driver) turns
polling off with one log line. A failing one is retried at every interval: each failure is
counted, the readings are dropped from /metrics (stale values would look healthy), and the log
says so once when it starts failing and once when it recovers.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from npuwatch.child_process import ChildStopped
from npuwatch.collector.npu_smi_command import (
    NpuSmiFailed,
    NpuSmiUnavailable,
    run_npu_smi,
)
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.npu_smi import NpuSmiReport, parse_npu_smi
from npuwatch.parsers.telemetry import device_records
from npuwatch.records import Record

log = logging.getLogger(__name__)

Deliver = Callable[[list[Record]], None]
"""Where the device records of one poll go (the journal queue)."""


class ReadingObserver(Protocol):
    """Told each reading, and when there is none (the ascend_npu_* gauges follow this way)."""

    def update(self, report: NpuSmiReport) -> None:
        """The latest reading of every chip."""

    def clear(self) -> None:
        """The last poll failed: the readings before it are no longer true."""


@dataclass(frozen=True)
class PollSettings:
    command: tuple[str, ...]
    interval_s: float = 30.0
    timeout_s: float = 10.0


class NpuSmiPoller:
    """Runs npu-smi on a schedule and hands each reading to the gauges and the journal."""

    def __init__(
        self,
        settings: PollSettings,
        readings: ReadingObserver,
        metrics: SelfMetrics,
        deliver: Deliver | None,
        stop: threading.Event,
        run: Callable[[Sequence[str], float], str] = run_npu_smi,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._readings = readings
        self._metrics = metrics
        self._deliver = deliver
        self._stop = stop
        self._run_command = run
        self._wall = wall
        self._failing = False
        self.enabled = True
        self.thread = threading.Thread(target=self._loop, name="npuwatch-npu-smi", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:  # a bug here must not end device telemetry for good
                log.exception("npu-smi poll failed unexpectedly; trying again next interval")
            if not self.enabled:
                return
            self._stop.wait(self.settings.interval_s)

    def poll(self) -> NpuSmiReport | None:
        """One poll: the report it gave, or None (failed, or npu-smi absent: then disabled)."""
        command = self.settings.command
        started = self._wall()
        try:
            text = self._run_command(command, self.settings.timeout_s)
        except NpuSmiUnavailable as error:
            self.enabled = False
            log.warning("%s: device telemetry is off (set [devices] npu_smi_command)", error)
            return None
        except NpuSmiFailed as error:
            self._failed(str(error), "failed")
            return None
        except ChildStopped:
            return None  # the agent is stopping: no reading, and nothing to say
        report = parse_npu_smi(text)
        if not report.chips:
            unreadable = f"{shlex.join(command)} printed no chip row npuwatch can read"
            self._failed(unreadable, "unreadable")
            return None
        self._metrics.npu_smi_polls.labels("ok").inc()
        self._metrics.npu_smi_polled(up=True, wall=self._wall())
        self._readings.update(report)
        if self._failing:
            self._failing = False
            log.warning("%s answers again", shlex.join(command))
        if self._deliver is not None:
            self._deliver(device_records(report, int(started * 1_000_000)))
        return report

    def _failed(self, reason: str, result: str) -> None:
        self._metrics.npu_smi_polls.labels(result).inc()
        self._metrics.npu_smi_polled(up=False, wall=self._wall())
        self._readings.clear()
        if not self._failing:
            self._failing = True
            log.warning("%s; device readings are off until it answers", reason)
