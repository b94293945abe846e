"""What a person wants to see after a failed job: the summary of a whole log tree.

Counts by level, module and log kind; every error code with its count, first and last time and
the processes and devices it came from; the first ERROR of each process with the lines before it
(the root cause is usually above the last ERROR); processes, devices and the time span covered.
The aggregator keeps no records, only counters and a short window of lines per file, so a tree of
any size is summarised in bounded memory. A process is a pid on a host: a collection of hosts
(`hosts`) has the same pid on several of them.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import Any, cast

from npuwatch.correlation.incident import Incident
from npuwatch.records import Flag, Record, SourceInfo, format_timestamp
from npuwatch.rules.events import Event
from npuwatch.scan.findings import Verdict, group, verdict
from npuwatch.scan.findings import place as place_of
from npuwatch.vocabulary import ERROR_LEVELS

DEFAULT_CONTEXT_LINES = 50


@dataclass
class CodeStats:
    """Where and when one error code was seen."""

    code: str
    count: int = 0
    first_us: int | None = None
    last_us: int | None = None
    processes: dict[tuple[str | None, int], str] = field(default_factory=dict)
    """The name of each process by (host, pid)."""
    devices: set[int] = field(default_factory=set)

    def sorted_processes(self) -> list[tuple[str | None, int, str]]:
        """(host, pid, name), by host then pid."""
        return sorted(
            ((host, pid, name) for (host, pid), name in self.processes.items()),
            key=lambda item: (item[0] is not None, item[0] or "", item[1]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "count": self.count,
            "first": _iso(self.first_us),
            "last": _iso(self.last_us),
            "processes": [
                {"host": host, "pid": pid, "name": name}
                for host, pid, name in self.sorted_processes()
            ],
            "devices": sorted(self.devices),
        }


@dataclass
class ProcessStats:
    pid: int | None
    name: str | None
    host: str | None = None
    records: int = 0
    errors: int = 0
    first_us: int | None = None
    last_us: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "pid": self.pid,
            "name": self.name,
            "records": self.records,
            "errors": self.errors,
            "first": _iso(self.first_us),
            "last": _iso(self.last_us),
        }


_ProcessKey = tuple[str | None, object]
"""A process in ScanResult.processes: its host, and its pid (or its file's path)."""


@dataclass
class FirstError:
    """The first ERROR record of a process, with the lines of its file just before it."""

    pid: int | None
    process_name: str | None
    path: str | None
    line_number: int
    timestamp_us: int | None
    module: str | None
    codes: list[str]
    message: str
    original: str
    context: list[str]
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "pid": self.pid,
            "process_name": self.process_name,
            "file": self.path,
            "line": self.line_number,
            "timestamp": _iso(self.timestamp_us),
            "module": self.module,
            "error_codes": self.codes,
            "message": self.message,
            "original": self.original,
            "context": self.context,
        }


@dataclass
class ScanResult:
    root: str
    files: int = 0
    bytes: int = 0
    lines: int = 0
    records: int = 0
    first_us: int | None = None
    last_us: int | None = None
    levels: Counter[str] = field(default_factory=Counter)
    modules: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    flags: Counter[str] = field(default_factory=Counter)
    codes: dict[str, CodeStats] = field(default_factory=dict)
    processes: dict[tuple[str | None, object], ProcessStats] = field(default_factory=dict)
    """By (host, pid), or (host, file) for a file whose lines and name carry no pid."""
    devices: set[int] = field(default_factory=set)
    first_errors: list[FirstError] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    rules_applied: bool = False
    hosts: list[str] = field(default_factory=list)
    """The hosts scanned: a collection's host folders, or the one host named by the caller."""
    collection: bool = False
    """Whether the hosts are a collection's folders (then the report names them)."""
    incidents: list[Incident] = field(default_factory=list)
    """Collective failures: which device failed first, who was only waiting (correlation/)."""

    @property
    def error_records(self) -> int:
        return sum(count for level, count in self.levels.items() if level in ERROR_LEVELS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "hosts": self.hosts,
            "incidents": [incident.to_dict() for incident in self.incidents],
            "files": self.files,
            "bytes": self.bytes,
            "lines": self.lines,
            "records": self.records,
            "errors": self.error_records,
            "span": {"first": _iso(self.first_us), "last": _iso(self.last_us)},
            "levels": dict(self.levels.most_common()),
            "modules": dict(self.modules.most_common()),
            "kinds": dict(self.kinds.most_common()),
            "flags": dict(self.flags.most_common()),
            "error_codes": [
                stats.to_dict()
                for stats in sorted(self.codes.values(), key=lambda s: (-s.count, s.code))
            ],
            "processes": [stats.to_dict() for stats in self.sorted_processes()],
            "devices": sorted(self.devices),
            "first_errors": [error.to_dict() for error in self.first_errors],
            "problems": self.problems,
            **self._findings(),
        }

    def _findings(self) -> dict[str, Any]:
        if not self.rules_applied:
            return {}
        first = self.first_failure()
        return {
            "verdict": None if first is None else first.to_dict(),
            "findings": [finding.to_dict() for finding in group(self.events)],
            "events": [event.to_document() for event in self.events],
        }

    def first_failure(self) -> Verdict | None:
        """The verdict on the rule events; when a collective incident names its root cause,
        the verdict is taken among that place's events, so the two never disagree."""
        if self.incidents:
            root_cause = self.incidents[0].root_cause
            # By device where the place has one, and by process: the records of a root cause
            # known by its pid only (its device named nowhere in its lines) are its events too.
            devices = {(p.host, p.device) for p in root_cause if p.device is not None}
            processes = {(p.host, p.pid) for p in root_cause if p.pid is not None}
            at_root = [
                event
                for event, (host, device, pid, _) in zip(
                    self.events, map(place_of, self.events), strict=True
                )
                if (host, device) in devices or (host, pid) in processes
            ]
            found = verdict(self.events, among=at_root)
            if found is not None:
                return found
        return verdict(self.events)

    def sorted_processes(self) -> list[ProcessStats]:
        return sorted(
            self.processes.values(),
            key=lambda p: (p.first_us is None, p.first_us or 0, p.host or "", p.pid or 0),
        )


class ScanAggregator:
    """Folds the records of a log tree into a ScanResult, a batch of one file at a time.

    Counting is done per batch with C-speed passes (`map`, `Counter`, `list.count`); Python looks
    at a record on its own only when it is an error, carries codes or flags, or starts a process.
    """

    def __init__(self, root: str, context_lines: int = DEFAULT_CONTEXT_LINES) -> None:
        self.result = ScanResult(root=root)
        self._context_lines = context_lines
        self._window: deque[Record] = deque(maxlen=max(context_lines, 1))
        self._line_number = 0
        self._source = SourceInfo()
        self._file_records = 0
        # Processes whose first or last time is still a firmware time from before clock sync.
        self._firmware_first: set[_ProcessKey] = set()
        self._firmware_last: set[_ProcessKey] = set()

    def start_file(self, source: SourceInfo, size: int) -> None:
        self._finish_file()
        self._source = source
        self._window.clear()
        self._line_number = 0
        self._file_records = 0
        result = self.result
        result.files += 1
        result.bytes += size
        if source.device is not None:
            result.devices.add(source.device)

    def add_problem(self, problem: str) -> None:
        self.result.problems.append(problem)

    def add(self, record: Record) -> None:
        self.add_batch([record])

    def add_batch(self, records: Sequence[Record]) -> None:
        """Fold consecutive records of the current file."""
        if not records:
            return
        result = self.result
        levels = list(map(_LEVEL, records))
        if None in levels:
            result.levels.update(level or "NONE" for level in levels)
        else:
            result.levels.update(levels)
        result.modules.update(filter(None, map(_LOGGER, records)))
        flags = list(map(_FLAGS, records))
        flagged = list(compress(range(len(records)), flags))
        times = list(map(_TIME, records))
        pre_sync = {i for i in flagged if flags[i] & Flag.PRE_CLOCK_SYNC}
        self._span(times, pre_sync)
        for value, count in Counter(map(flags.__getitem__, flagged)).items():
            for name in Flag.names(value):
                result.flags[name] += count
        self._processes(records, times, pre_sync)
        interesting = sorted(
            set(compress(range(len(records)), map(ERROR_LEVELS.__contains__, levels)))
            | {i for i in flagged if flags[i] & Flag.HAS_CODES}
        )
        first_line = self._line_number + 1

        def line_of(position: int) -> Callable[[], int]:
            return lambda: first_line + sum(map(_LINES, records[:position]))

        for position in interesting:
            self._note_problem_record(
                records[position],
                position,
                records,
                line_of(position),
                levels[position] in ERROR_LEVELS,
            )
        self._line_number += sum(map(_LINES, records))
        self._file_records += len(records)
        self._window.extend(records)

    def skip_lines(self, count: int) -> None:
        """Lines of the current file that no record stands for (a report's lines between the
        findings read from it), so that the records after them keep their line numbers."""
        self._line_number += max(count, 0)

    @property
    def next_line(self) -> int:
        """The line number, in the current file, of the next record to be added."""
        return self._line_number + 1

    def finish(self) -> ScanResult:
        self._finish_file()
        return self.result

    def _span(self, times: list[int | None], excluded: set[int]) -> None:
        """The time span, leaving out times from before a device's clock sync (`excluded`)."""
        if excluded or None in times:
            usable = [t for i, t in enumerate(times) if t is not None and i not in excluded]
        else:
            usable = cast(list[int], times)
        if not usable:
            return
        low, high = min(usable), max(usable)
        result = self.result
        if result.first_us is None or low < result.first_us:
            result.first_us = low
        if result.last_us is None or high > result.last_us:
            result.last_us = high

    def _processes(
        self, records: Sequence[Record], times: list[int | None], pre_sync: set[int]
    ) -> None:
        """Records, name and time span of each process of the batch. A batch of a file that
        several processes write in turn holds dozens of pids: where each pid first and last
        occurs and how often is found in three C-speed passes, not three passes a pid. A
        process's first and last times are taken after its device's clock sync: a firmware
        line's 1970 stands only until a real time of the process is read."""
        pids = list(map(_PID, records))
        default = self._source.pid
        host = self._source.host
        counts = Counter(pids)
        last_at = dict(zip(pids, range(len(pids)), strict=True))
        first_at = dict(zip(reversed(pids), range(len(pids) - 1, -1, -1), strict=True))
        # Records without a pid belong to the file's own pid: the two are one process, whose
        # first and last records are the earlier first and the later last of the two.
        spans: dict[int | None, tuple[int, int, int]] = {}
        for pid, count in counts.items():
            effective = pid if pid is not None else default
            span = spans.get(effective)
            first, last = first_at[pid], last_at[pid]
            if span is not None:
                first, last, count = min(first, span[0]), max(last, span[1]), count + span[2]
            spans[effective] = (first, last, count)
        for effective, (first, last, count) in spans.items():
            key = (host, effective if effective is not None else self._source.path)
            process = self.result.processes.get(key)
            name = records[first].process_name
            if process is None:
                process = self.result.processes[key] = ProcessStats(effective, name, host)
            elif not process.name and name:
                process.name = name
            process.records += count
            earliest, real = _time_from(times, range(first, last + 1), pre_sync)
            if earliest is not None and (
                process.first_us is None or (real and key in self._firmware_first)
            ):
                process.first_us = earliest
                _note(self._firmware_first, key, firmware=not real)
            latest, real = _time_from(times, range(last, first - 1, -1), pre_sync)
            if latest is not None and (
                real or process.last_us is None or key in self._firmware_last
            ):
                process.last_us = latest
                _note(self._firmware_last, key, firmware=not real)

    def _finish_file(self) -> None:
        if self._file_records:
            self.result.kinds[self._source.kind] += self._file_records
            self.result.records += self._file_records
            self.result.lines += self._line_number
            self._file_records = 0

    def _note_problem_record(
        self,
        record: Record,
        position: int,
        records: Sequence[Record],
        line_number: Callable[[], int],
        is_error: bool,
    ) -> None:
        """Codes, devices and the first error of the record's process. The line number is
        worked out only for a first error (summing line counts is not free)."""
        pid = record.pid if record.pid is not None else self._source.pid
        host = self._source.host
        process = self.result.processes[(host, pid if pid is not None else self._source.path)]
        device = record.device if record.device is not None else self._source.device
        if device is not None:
            self.result.devices.add(device)
        for code in record.error_codes:
            stats = self.result.codes.get(code)
            if stats is None:
                stats = self.result.codes[code] = CodeStats(code)
            stats.count += 1
            timestamp = record.timestamp_us
            if timestamp is not None:
                if stats.first_us is None or timestamp < stats.first_us:
                    stats.first_us = timestamp
                if stats.last_us is None or timestamp > stats.last_us:
                    stats.last_us = timestamp
            if pid is not None:
                stats.processes.setdefault((host, pid), record.process_name or process.name or "")
            if device is not None:
                stats.devices.add(device)
        if not is_error:
            return
        process.errors += 1
        if process.errors == 1:
            self.result.first_errors.append(
                FirstError(
                    pid=pid,
                    process_name=process.name,
                    path=self._source.path,
                    line_number=line_number(),
                    timestamp_us=record.timestamp_us,
                    module=record.logger,
                    codes=list(record.error_codes),
                    message=record.message,
                    original=record.original,
                    context=self._context(position, records),
                    host=host,
                )
            )

    def _context(self, position: int, records: Sequence[Record]) -> list[str]:
        if not self._context_lines:
            return []
        lines: list[str] = []
        previous = list(self._window) + list(
            records[max(0, position - self._context_lines) : position]
        )
        for record in reversed(previous):
            lines[:0] = record.original.split("\n")
            if len(lines) >= self._context_lines:
                break
        return lines[-self._context_lines :]


_LEVEL = attrgetter("level")
_LOGGER = attrgetter("logger")
_FLAGS = attrgetter("flags")
_TIME = attrgetter("timestamp_us")
_PID = attrgetter("pid")
_LINES = attrgetter("line_count")


def _iso(epoch_us: int | None) -> str | None:
    return None if epoch_us is None else format_timestamp(epoch_us)


def _time_from(
    times: list[int | None], positions: range, pre_sync: set[int]
) -> tuple[int | None, bool]:
    """The first time at `positions` that is not from before a clock sync, and True; else the
    first time at all, and False (None when there is none). Nearly always the first position
    answers, without a pass."""
    start = positions[0]
    if times[start] is not None and start not in pre_sync:
        return times[start], True
    synced = next((times[i] for i in positions if times[i] is not None and i not in pre_sync), None)
    if synced is not None:
        return synced, True
    return next((times[i] for i in positions if times[i] is not None), None), False


def _note(keys: set[_ProcessKey], key: _ProcessKey, *, firmware: bool) -> None:
    """Remember whether `key`'s time just set is a firmware time (one a real time replaces)."""
    if firmware:
        keys.add(key)
    else:
        keys.discard(key)
