"""The correlator: facts and events in, in any order; incidents out, whenever asked.

`Correlator.add` only folds an item into the view of its process, so input can come file by
file (`scan`) or as it is written (the cluster service). `incidents()` works the verdicts out
from those views each time it is called (prepare.py binds and cuts, decide.py decides each
fault). Memory is linear in processes and the events they keep: the extractor caps events per
process, and the views keep facts as values, not as a history.
"""

from __future__ import annotations

from collections.abc import Iterable

from npuwatch.analysis.correlation.decide import decide
from npuwatch.analysis.correlation.incident import Incident
from npuwatch.analysis.correlation.lives import ProcessLog
from npuwatch.analysis.correlation.prepare import failures, prepare
from npuwatch.parsers.hccl.model import Extracted, Fact


class Correlator:
    """Folds facts and events; `incidents()` gives the verdicts so far."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, int], ProcessLog] = {}

    def add(self, item: Extracted) -> None:
        key = item.process
        log = self._logs.get((key.host, key.pid))
        if log is None:
            log = self._logs[(key.host, key.pid)] = ProcessLog(key.host, key.pid)
        if isinstance(item, Fact):
            log.add_fact(item)
        else:
            log.add_event(item)

    def add_all(self, items: Iterable[Extracted]) -> None:
        for item in items:
            self.add(item)

    def incidents(self) -> list[Incident]:
        views = {view.key: view for log in self._logs.values() for view in log.lives()}
        prepared = prepare(views)
        incidents = [decide(prepared, group) for group in failures(prepared)]
        return sorted(
            incidents,
            key=lambda i: (i.recovered, -(len(i.victims) + len(i.root_cause)), i.first_us or 0),
        )
