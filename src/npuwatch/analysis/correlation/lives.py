"""A process's facts and events as they arrived, and its lives cut out of them by time.

A process logs to several files (run and debug plogs, device logs, rolled-over parts) that
reach the correlator in any order, so its restarts and recoveries are known only once
everything has been read. A ProcessLog keeps what arrived; `lives()` cuts it at the restart
and recovery times into ProcessViews, one per life: a restart (HCCL initialised again, a
second `[HCCL_ENV]` block) starts a life that knows nothing of the one before; a recovery
(`HcclCommResume:success`) starts one that keeps its identity.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from dataclasses import dataclass, field

from npuwatch.analysis.correlation.processes import ProcessView
from npuwatch.parsers.hccl.model import CollectiveEvent, Fact, ProcessKey

SAME_BLOCK_US = 5_000_000
"""`[HCCL_ENV]` lines this close together are one block."""


@dataclass
class ProcessLog:
    host: str
    pid: int
    facts: list[Fact] = field(default_factory=list)
    events: list[CollectiveEvent] = field(default_factory=list)
    env_printed: dict[str, list[int]] = field(default_factory=dict)
    resumes: list[int] = field(default_factory=list)
    heard: list[int] = field(default_factory=list)
    dropped: int = 0

    def add_fact(self, fact: Fact) -> None:
        name = fact.name
        if name == "heard":
            if isinstance(fact.value, int):
                self.heard.append(fact.value)
        elif name == "hccl_env":
            if fact.time_us is not None:
                self.env_printed.setdefault(str(fact.value), []).append(fact.time_us)
        elif name == "resumed":
            if fact.time_us is not None:
                self.resumes.append(fact.time_us)
        elif name == "events_dropped":
            self.dropped += int(fact.value)
        else:
            self.facts.append(fact)

    def add_event(self, event: CollectiveEvent) -> None:
        self.events.append(event)

    def boundaries(self) -> list[tuple[int, bool]]:
        """(time, is a recovery) where each life after the first begins."""
        restarts = sorted(
            {time for times in self.env_printed.values() for time in sorted(times)[1:]}
        )
        merged: list[int] = []
        for time in restarts:
            if not merged or time - merged[-1] > SAME_BLOCK_US:
                merged.append(time)
        return sorted([(time, False) for time in merged] + [(time, True) for time in self.resumes])

    def lives(self) -> list[ProcessView]:
        cuts = self.boundaries()
        times = [time for time, _ in cuts]
        views = [
            ProcessView(ProcessKey(self.host, self.pid, index)) for index in range(len(cuts) + 1)
        ]
        for index, (_, recovery) in enumerate(cuts, 1):
            views[index].resumed = recovery

        def life_of(time_us: int | None) -> list[ProcessView]:
            if time_us is None:
                return views  # a fact without a time (the device of a device log) holds for all
            return [views[bisect_right(times, time_us)]]

        for fact in sorted(self.facts, key=lambda f: (f.time_us is None, f.time_us or 0)):
            for view in life_of(fact.time_us):
                view.add_fact(fact)
        for event in self.events:
            target = life_of(event.time_us)[-1] if event.time_us is not None else views[-1]
            target.add_event(event)
        for time in self.heard:
            views[bisect_right(times, time)].heard(time)
        views[-1].dropped += self.dropped
        for earlier, later in itertools.pairwise(views):
            if later.resumed:
                later.inherit(earlier)
        return [view for view in views if view.values or view.memberships or view.events]
