"""The correlator: facts and events in, in any order; incidents out, whenever asked.

`Correlator.add` only files an item under its process, so input can come file by file (`scan`)
or as it is written (the cluster service). `incidents()` works the verdicts out each time it is
called: each process's lives take in what arrived since the last call (lives.py), prepare.py
binds and cuts, decide.py decides each fault. Memory is linear in processes and the facts and
events they keep: the extractor caps events per process, and a process's lives can be cut
again only from its facts.
"""

from __future__ import annotations

from collections.abc import Iterable

from npuwatch.correlation.decide import decide
from npuwatch.correlation.errors_only import error_faults
from npuwatch.correlation.incident import Incident
from npuwatch.correlation.lives import ProcessLog
from npuwatch.correlation.prepare import failures, prepare
from npuwatch.parsers.hccl.model import Extracted, Fact, ProcessKey


class Correlator:
    """Folds facts and events; `incidents()` gives the verdicts so far."""

    def __init__(self, input_is_complete: bool = True) -> None:
        self._logs: dict[ProcessKey, ProcessLog] = {}
        """Keyed by host and pid (the first life)."""
        self._input_is_complete = input_is_complete
        """A collection or journals read after the fact (scan, correlate --journal), not a live
        stream: only then are a rank's last lines known to be its last (errors_only.py; at
        CANN's default log level a healthy rank is silent too)."""

    def add(self, item: Extracted) -> None:
        self.add_all((item,))

    def add_all(self, items: Iterable[Extracted]) -> None:
        logs = self._logs
        for item in items:
            log = logs.get(item.process)
            if log is None:
                log = self._log_of(item.process)
            if isinstance(item, Fact):
                log.add_fact(item)
            else:
                log.add_event(item)

    def _log_of(self, key: ProcessKey) -> ProcessLog:
        """The log of a process: facts and events of every life of a pid go to one log, which
        cuts them into lives itself (the extractor gives every item the first)."""
        plain = ProcessKey(key.host, key.pid)
        log = self._logs.get(plain)
        if log is None:
            log = self._logs[plain] = ProcessLog(key.host, key.pid)
        return log

    def incidents(self) -> list[Incident]:
        views = {view.key: view for log in self._logs.values() for view in log.lives()}
        prepared = prepare(views)
        faults = failures(prepared)
        if self._input_is_complete:
            faults += error_faults(prepared, faults)
        incidents = [decide(prepared, group) for group in faults]
        return sorted(
            incidents,
            # weak, unlocated faults last: consumers read incidents[0] as the verdict (§5.11)
            key=lambda i: (
                i.recovered,
                i.kind == "weak_timeout_unlocated",
                -(len(i.victims) + len(i.root_cause)),
                i.first_us or 0,
            ),
        )
