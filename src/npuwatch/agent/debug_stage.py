"""The debugging-tools importer: complete outputs of msprobe (compare, overflow check, monitor),
msSanitizer and msaicerr under the configured folders, into the journal, rule events and the
ascend_precision_* / ascend_monitor_* / ascend_sanitizer_* metrics.

A thread of its own that wakes every `scan_interval`, as the profiling importer does: an
output is read by a child process (`debug_digest`), so the agent never loads pandas. Each
finding becomes a journal entry (parsers/debug_entries.py), shipped to
logs-ascend.debug-<namespace>; the entries of one output also go through the rules (a fresh
engine over the agent's current rule set: they are not log lines the rules thread reads), whose
events are journaled with them. An output imported again (it changed) adds only the findings
it did not have, and replaces its figures. An output that cannot be read is logged once and
left until it changes.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npuwatch.agent.debug_digest import digest_in_child
from npuwatch.agent.periodic import Periodic
from npuwatch.agent.rules_stage import event_row
from npuwatch.child_process import ChildStopped
from npuwatch.collector.finished_outputs import Output, OutputState, OutputTracker, Signature
from npuwatch.config.sections import DebugToolsSection
from npuwatch.debug_tools.findings import OutputDigest, entry_records
from npuwatch.handoff import EventRow
from npuwatch.parsers.debug_entries import DEBUG_KIND
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import RuleSet
from npuwatch.sinks.prometheus.debug_metrics import DebugMetrics, OutputFigures

log = logging.getLogger(__name__)

Deliver = Callable[[str, SourceInfo, list[Record], list[EventRow]], None]
"""Where the entries and events of one output go: (journal stream key, source, records,
events)."""

EventRows = Callable[[list[Record], SourceInfo, str], list[EventRow]]
"""The rule events of an output's records (stream key as the events' file key)."""


@dataclass(frozen=True)
class DebugToolsPlan:
    folders: tuple[Path, ...]
    scan_interval_s: float
    settle_s: float


def plan_debug_tools(section: DebugToolsSection) -> DebugToolsPlan:
    """The importer's plan; with no folders it does not run, but the metrics keep showing the
    outputs imported before (their figures are in the state file)."""
    return DebugToolsPlan(tuple(section.paths), section.scan_interval, section.settle)


def rule_events(ruleset: Callable[[], RuleSet]) -> EventRows:
    """Events of the current rule set over an output's entries, as the rules thread would make
    them of log records."""

    def events(records: list[Record], source: SourceInfo, key: str) -> list[EventRow]:
        engine = RuleEngine(ruleset())
        stream = engine.stream(source)
        engine.process(records, stream)
        stream.close()
        return [event_row(event, key) for event in engine.flush()]

    return events


class DebugImporter:
    """Finds complete outputs, reads them, and hands their findings and figures on."""

    def __init__(
        self,
        plan: DebugToolsPlan,
        tracker: OutputTracker,
        debug_metrics: DebugMetrics,
        host: str,
        deliver: Deliver | None,
        stop: threading.Event,
        events: EventRows | None = None,
        load: Callable[[str, Path], OutputDigest] = digest_in_child,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.plan = plan
        self._tracker = tracker
        self._debug_metrics = debug_metrics
        self._host = host
        self._deliver = deliver
        self._stop = stop
        self._events = events
        self._load = load
        self._wall = wall
        for path, state in tracker.imported.items():  # the outputs imported before a restart
            debug_metrics.update(path, _figures(state))
        self._periodic = Periodic(
            "npuwatch-debug",
            self.scan,
            plan.scan_interval_s,
            stop,
            "looking for debugging-tool outputs failed",
        )
        self.thread = self._periodic.thread

    def start(self) -> None:
        self._periodic.start()

    def scan(self) -> int:
        """Import every output that is ready now; the number imported."""
        ready, gone = self._tracker.ready(self.plan.folders, self._wall())
        for path in gone:
            self._debug_metrics.gone(path)
        imported = 0
        for output, signature in ready:
            if self._stop.is_set():
                break
            if self._import(output, signature):
                imported += 1
        return imported

    def _import(self, output: Output, signature: Signature) -> bool:
        before = self._tracker.imported.get(output.path)
        if before is None or not before.present:
            before = OutputState(output.kind, signature)
        try:
            digest = self._load(output.kind, output.path)
        except ChildStopped:
            return False  # the agent is stopping: nothing is recorded, the next start reads it
        except Exception as error:  # any unreadable output: say so once, keep going
            log.warning(
                "%s output %s cannot be read (%s); it is tried again when it changes",
                output.kind,
                output.path,
                error,
            )
            before.signature = signature  # not tried again until it changes
            self._tracker.done(output.path, before)
            return False
        delivered = set(before.delivered)
        fresh = [entry for entry in digest.entries if _key(entry) not in delivered]
        state = OutputState(
            kind=output.kind,
            signature=signature,
            delivered=[*before.delivered, *(_key(entry) for entry in fresh)],
            next_offset=before.next_offset + len(fresh),
            figures=digest.figures,
            imported_at_s=self._wall(),
        )
        if fresh and self._deliver is not None:
            when_us = signature.newest_ns // 1000
            records = entry_records(fresh, when_us, before.next_offset)
            source = SourceInfo(path=str(output.path), host=self._host, kind=DEBUG_KIND)
            key = f"{DEBUG_KIND}@{self._host}:{output.path}"
            for record in records:
                record.source = source
            events = self._events(records, source, key) if self._events is not None else []
            self._deliver(key, source, records, events)
        self._tracker.done(output.path, state)
        self._debug_metrics.update(str(output.path), _figures(state))
        for problem in digest.problems[:1]:  # the rest are in `npuwatch <tool> summary`
            log.warning("%s output %s: %s", output.kind, output.path, problem)
        log.info(
            "imported %s output %s (%d new finding%s)",
            output.kind,
            output.path,
            len(fresh),
            "s" * (len(fresh) != 1),
        )
        return True


def _key(entry: dict[str, Any]) -> str:
    """A short digest of what the entry is about (the state file keeps these)."""
    text = str(entry.get("key") or entry.get("message"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _figures(state: OutputState) -> OutputFigures:
    return OutputFigures(state.kind, state.figures, state.imported_at_s, state.present)
