"""A process's facts and events as they arrived, and its lives cut out of them by time.

A process logs to several files (run and debug plogs, device logs, rolled-over parts) that
reach the correlator in any order, so its restarts and recoveries are known only once
everything has been read. A ProcessLog keeps what arrived; `lives()` cuts it at the restart
and recovery times into ProcessViews, one per life: a restart (HCCL initialised again, a
second `[HCCL_ENV]` block) starts a life that knows nothing of the one before; a recovery
(`HcclCommResume:success`) starts one that keeps its identity.

The views are kept between verdicts and `lives()` folds into them only what arrived since
the last one, when that gives what folding everything again in time order would: the
process has one life and the new facts come no earlier than those folded. Otherwise (a cut
moved, a fact older than one already folded, a process with several lives, whose later lives
inherit from earlier ones) the process is folded from scratch: rare, and bounded by its own
facts.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from dataclasses import dataclass, field
from operator import itemgetter, le
from typing import cast

from npuwatch.correlation.processes import FactParts, ProcessView
from npuwatch.parsers.hccl.model import CollectiveEvent, Fact, ProcessKey

SAME_BLOCK_US = 5_000_000
"""`[HCCL_ENV]` lines this close together are one block."""
_MARKERS = frozenset({"heard", "hccl_env", "resumed", "events_dropped"})
"""Facts that mark the process's lives and time, not its identity: kept aside."""
_TIME = itemgetter(2)
"""The time of a fact as the log keeps it (FactParts)."""


@dataclass
class ProcessLog:
    host: str
    pid: int
    facts: list[FactParts] = field(default_factory=list)
    events: list[CollectiveEvent] = field(default_factory=list)
    env_printed: dict[str, list[int]] = field(default_factory=dict)
    resumes: list[int] = field(default_factory=list)
    heard: list[int] = field(default_factory=list)
    dropped: int = 0
    _cuts: list[tuple[int, bool]] = field(default_factory=list)
    _views: list[ProcessView] = field(default_factory=list)
    _folded: tuple[int, int, int, int] = (0, 0, 0, 0)
    """How many facts, events and heard times, and how many dropped events the views hold."""
    _latest: int | None = None
    """The time of the latest fact folded (None: none yet, or the last one had no time)."""
    _cuts_moved: bool = False
    _cuts_stale: bool = False
    """A restart or recovery marker arrived: the cuts are worked out again at the next fold
    (once, not at each marker: a process prints its [HCCL_ENV] block thousands of times)."""

    def __post_init__(self) -> None:
        self._views = [ProcessView(ProcessKey(self.host, self.pid))]

    def add_fact(self, fact: Fact) -> None:
        name = fact.name
        if name not in _MARKERS:
            self.facts.append(fact[1:5])
        elif name == "heard":
            if isinstance(fact.value, int):
                self.heard.append(fact.value)
        elif name == "hccl_env":
            if fact.time_us is not None:
                printed = self.env_printed.setdefault(str(fact.value), [])
                printed.append(fact.time_us)
                if len(printed) > 1:  # the first print of a variable never starts a life
                    self._cuts_stale = True
        elif name == "resumed":
            if fact.time_us is not None:
                self.resumes.append(fact.time_us)
                self._cuts_stale = True
        else:  # events_dropped
            self.dropped += int(fact.value)

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
        if self._cuts_stale:
            self._cut_again()
            self._cuts_stale = False
        arrived = (len(self.facts), len(self.events), len(self.heard), self.dropped)
        if arrived != self._folded or self._cuts_moved:
            if self._cuts_moved or self._cuts or not self._fold_arrivals():
                self._views = self._fold()
            self._folded = arrived
            self._cuts_moved = False
        return [view for view in self._views if view.values or view.memberships or view.events]

    def _cut_again(self) -> None:
        cuts = self.boundaries()
        if cuts != self._cuts:
            self._cuts = cuts
            self._cuts_moved = True

    def _fold_arrivals(self) -> bool:
        """Fold what arrived since the last fold into the one life, if the new facts keep time
        order after those folded (else say no: only a fold from scratch is right)."""
        facts, events, heard, dropped = self._folded
        new = self.facts[facts:]
        if new:
            times = list(map(_TIME, new))
            if not self._keeps_order(times, facts):
                return False
            self._latest = times[-1]
        view = self._views[0]
        view.add_facts(new)
        for event in self.events[events:]:
            view.add_event(event)
        for time in self.heard[heard:]:
            view.heard(time)
        view.dropped += self.dropped - dropped
        return True

    def _keeps_order(self, times: list[int | None], folded: int) -> bool:
        """Whether facts of these times, folded after `folded` facts, are where a stable sort
        by time would put them (a fact without a time sorts after every timed one)."""
        untimed = times.count(None)
        if untimed and times.index(None) != len(times) - untimed:
            return False  # a timed fact after one without a time
        timed = cast(list[int], times[: len(times) - untimed])
        if folded:
            if self._latest is None:  # the last one folded had no time: no timed one may follow
                return not timed
            if timed and timed[0] < self._latest:
                return False
        return all(map(le, timed, timed[1:]))

    def _fold(self) -> list[ProcessView]:
        cuts = self._cuts
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

        facts = sorted(self.facts, key=lambda fact: (fact[2] is None, fact[2] or 0))
        for fact in facts:
            for view in life_of(fact[2]):
                view.add_facts((fact,))
        self._latest = facts[-1][2] if facts else None
        for event in self.events:
            target = life_of(event.time_us)[-1] if event.time_us is not None else views[-1]
            target.add_event(event)
        for time in self.heard:
            views[bisect_right(times, time)].heard(time)
        views[-1].dropped += self.dropped
        for earlier, later in itertools.pairwise(views):
            if later.resumed:
                later.inherit(earlier)
        return views
