"""The rule engine: records in, events out, with thresholds, dedupe and context.

A batch of records is dispatched at C speed: each record's plan key (level, module, format) is
computed with `map`, the keys whose plan is empty are dropped with `itertools.compress`, and only
the records left — those that can match something, and those that carry codes — are tested in
Python. Counting rules (a DEBUG flood) are tallied per batch from the key counts.

Per stream (one file), a `RuleStream` keeps the records before the current one (context) and the
events still waiting for the records after them. An event is handed out by `drain()` once its
after-context is complete and its dedupe window has passed in log time (or at `flush()`), with
the number of matches it stands for.

`replace()` swaps in a new rule set at once: the index is one object, built aside and assigned in
one step; threshold state carries over for the rules that remain (by id).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter, contains, or_
from typing import Any, cast

from npuwatch.records import BatchIndex, Record, SourceInfo
from npuwatch.rules.events import Event
from npuwatch.rules.index import Entry, Plan, PlanKey, RuleIndex, build_index
from npuwatch.rules.loader import RuleSet
from npuwatch.rules.model import Rule
from npuwatch.rules.pack import RuleLoadError

_US = 1_000_000
_LEVEL = attrgetter("level")
_LOGGER = attrgetter("logger")
_FLAGS = attrgetter("flags")
_ORIGINAL = attrgetter("original")


class _Tally:
    """The matches of a threshold rule within its window, and their sum. The sum is kept, not
    recounted: records of many files arrive out of time order, so the window can hold many
    entries, and summing them at every match made a host with 10,000 files quadratic."""

    __slots__ = ("hits", "total")

    def __init__(self) -> None:
        self.hits: deque[tuple[int, int]] = deque()
        self.total = 0


class RuleStream:
    """Rule state of one stream (one file): the records before, the events waiting for after."""

    def __init__(self, source: SourceInfo | None = None, max_before: int = 50) -> None:
        self.source = source
        self.kind = source.kind if source is not None else "other"
        self.window: deque[Record] = deque(maxlen=max(max_before, 1))
        self.pending: list[tuple[Event, int]] = []
        """Events waiting for context after them, with how many records they still need."""
        self._plans_of: RuleIndex | None = None
        self._plans: dict[PlanKey, Plan] = {}

    def plans_for(self, index: RuleIndex) -> dict[PlanKey, Plan]:
        """This stream's plan cache (reset when the rule set was replaced)."""
        if self._plans_of is not index:
            self._plans_of = index
            self._plans = {}
        return self._plans

    def close(self) -> None:
        """The stream ended: its events stop waiting for records after them."""
        for event, _ in self.pending:
            event.context_complete = True
        self.pending.clear()


class RuleEngine:
    """Matches records against a rule set and produces events."""

    def __init__(self, ruleset: RuleSet) -> None:
        self._index = build_index(ruleset)
        self._thresholds: dict[str, dict[tuple[Any, ...], _Tally]] = {}
        self._open: dict[tuple[Any, ...], Event] = {}
        self._waiting: list[Event] = []
        self._now_us = 0
        self.match_counts: Counter[str] = Counter()
        """Matches per rule id, before thresholds and dedupe (for metrics)."""

    @property
    def rules(self) -> list[Rule]:
        return self._index.rules

    def fresh(self) -> RuleEngine:
        """An engine of the same rules with no state: nothing counted, nothing held (one host
        of a scan read apart from the others; the rules are not compiled again)."""
        engine = RuleEngine(RuleSet())
        engine._index = self._index
        return engine

    def stream(self, source: SourceInfo | None = None) -> RuleStream:
        return RuleStream(source, self._index.max_before)

    def reload(self, load: Callable[[], RuleSet]) -> list[str]:
        """Load a new rule set with `load` and swap it in; when loading fails, the rules in
        force keep running and the problems are returned (the agent logs them)."""
        try:
            ruleset = load()
        except RuleLoadError as error:
            return [str(problem) for problem in error.problems]
        self.replace(ruleset)
        return []

    def replace(self, ruleset: RuleSet) -> None:
        """Swap in a new rule set at once; threshold state of rules that remain is kept."""
        index = build_index(ruleset)
        keep = {rule.id for rule in index.rules}
        self._thresholds = {k: v for k, v in self._thresholds.items() if k in keep}
        self._index = index

    def process(
        self,
        records: Sequence[Record],
        stream: RuleStream,
        raw: bytes | None = None,
        hints: BatchIndex | None = None,
    ) -> None:
        """Test a batch of consecutive records of one stream against the rules.

        `raw`, the bytes the records were parsed from, lets literal rules skip a batch that does
        not contain their literal without looking at its records; `hints`, what the parser
        learnt about the batch (`StreamParser.last_batch`), spares a pass over the records.
        """
        if not records:
            return
        index = self._index
        loggers: list[str | None] | None = None
        if hints is not None and len(hints.levels) == len(records):
            levels, flagged, loggers = hints
        else:
            levels = list(map(_LEVEL, records))
            flagged = list(compress(range(len(records)), map(_FLAGS, records)))
        if index.level_counters:
            self._tally(index, levels, records, stream)
        positions, literal_hits = self._candidates(
            index, levels, flagged, loggers, records, stream, raw
        )
        kind = stream.kind
        plans = stream.plans_for(index)
        new_pending: list[tuple[Event, int]] = []
        for position in positions:
            record = records[position]
            key = (levels[position], record.logger, record.format, kind)
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = index.plan(key)
            entries: Sequence[Entry] = plan.entries
            if record.flags or position in literal_hits:
                extra = index.extra_entries(record)
                if extra:
                    entries = _merge(index, entries, extra)
            if not entries:
                continue
            matched = [rule for rule, test in entries if test is None or test(record)]
            if not matched:
                continue
            if len(matched) > 1:
                tier = min(rule.spec.fallback for rule in matched)
                matched = [rule for rule in matched if rule.spec.fallback == tier]
            for rule in matched:
                self.match_counts[rule.id] += 1
                event = self._on_match(index, rule, record, position, records, stream)
                if event is not None and rule.spec.context.after:
                    new_pending.append((event, position))
        self._fill_after(records, stream, new_pending)
        stream.window.extend(records)
        last = records[-1].timestamp_us
        if last is not None and last > self._now_us:
            self._now_us = last

    @staticmethod
    def _candidates(
        index: RuleIndex,
        levels: list[str | None],
        flagged: list[int],
        loggers: list[str | None] | None,
        records: Sequence[Record],
        stream: RuleStream,
        raw: bytes | None,
    ) -> tuple[Iterable[int], set[int] | frozenset[int]]:
        """Positions of the records that can match any rule, found with C-speed passes: a level
        or module some rule is keyed by, a flag (codes, another format), a literal; and the
        positions found by a literal. `loggers`, each record's module when the parser gave
        them, spares reading the modules of a batch that holds none of the rules' modules."""
        count = len(records)
        if index.everything or stream.kind in index.kinds:
            return range(count), frozenset(range(count)) if index.by_literal else frozenset()
        selectors: Iterator[Any] = map(index.levels.__contains__, levels)
        modules = index.modules
        if modules and (loggers is None or not modules.isdisjoint(loggers)):
            named = map(_LOGGER, records) if loggers is None else loggers
            selectors = map(or_, selectors, map(modules.__contains__, named))
        by_key = list(compress(range(count), selectors))
        positions: Iterable[int] = sorted(set(by_key).union(flagged)) if flagged else by_key
        if not index.by_literal:
            return positions, frozenset()
        # One search of the whole batch per literal first: nearly always the literal is absent.
        batch: bytes | str = raw if raw is not None else "\n".join(map(_ORIGINAL, records))
        lowered_batch: bytes | str | None = None
        originals: list[str] | None = None
        hits: set[int] = set()
        for text, ignore_case in index.by_literal:
            needle: bytes | str = text.encode() if isinstance(batch, bytes) else text
            if ignore_case:
                if lowered_batch is None:
                    lowered_batch = batch.lower()
                if needle.lower() not in lowered_batch:  # type: ignore[operator]
                    continue
            elif needle not in batch:  # type: ignore[operator]
                continue
            if originals is None:
                originals = list(map(_ORIGINAL, records))
            if ignore_case:
                matches = map(contains, map(str.lower, originals), repeat(text.lower()))
            else:
                matches = map(contains, originals, repeat(text))
            hits.update(compress(range(count), matches))
        if not hits:
            return positions, frozenset()
        return sorted(hits.union(positions)), hits

    def drain(self, now_us: int | None = None) -> list[Event]:
        """Events whose dedupe window has passed (in log time) and whose context is complete."""
        now = self._now_us if now_us is None else now_us
        ready, waiting = [], []
        for event in self._waiting:
            window = event.rule.spec.dedupe.within * _US
            closed = event.first_us is None or event.first_us + window < now
            if closed and event.context_complete:
                ready.append(event)
                self._forget(event)
            else:
                waiting.append(event)
        self._waiting = waiting
        return events_by_time(ready)

    def waiting_offsets(self) -> dict[SourceInfo | None, int]:
        """The offset of the earliest trigger of the events still held, per source: a restart
        must read its file again from there for those events not to be lost."""
        earliest: dict[SourceInfo | None, int] = {}
        for event in self._waiting:
            offset = event.trigger.offset
            if offset is None:
                continue
            source = event.trigger.source
            if offset < earliest.get(source, offset + 1):
                earliest[source] = offset
        return earliest

    def flush(self) -> list[Event]:
        """Every event still held (the end of a scan, or shutdown)."""
        ready = self._waiting
        self._waiting = []
        self._open.clear()
        for event in ready:
            event.context_complete = True
        return events_by_time(ready)

    # --- matches, thresholds, dedupe --------------------------------------------------------------

    def _tally(
        self,
        index: RuleIndex,
        levels: list[str | None],
        records: Sequence[Record],
        stream: RuleStream,
    ) -> None:
        """Apply a batch's matches of the counting rules, all at the time of the last match."""
        for level, rules in index.level_counters.items():
            count = levels.count(level)
            if not count:
                continue
            position = len(levels) - 1
            while levels[position] != level:
                position -= 1
            record = records[position]
            for rule in rules:
                self.match_counts[rule.id] += count
                if self._reached(index, rule, record, count):
                    self._open_event(index, rule, record, position, records, stream)

    def _reached(self, index: RuleIndex, rule: Rule, record: Record, count: int) -> bool:
        """Add `count` matches at the record's time; whether the threshold is reached."""
        threshold = rule.spec.threshold
        assert threshold is not None
        group = tuple(getter(record) for getter in index.group_getters[rule])
        tally = self._thresholds.setdefault(rule.id, {}).get(group)
        if tally is None:
            tally = self._thresholds[rule.id][group] = _Tally()
        now = record.timestamp_us or 0
        tally.hits.append((now, count))
        tally.total += count
        horizon = now - int(threshold.within * _US)
        hits = tally.hits
        while hits and hits[0][0] < horizon:
            tally.total -= hits.popleft()[1]
        if tally.total < threshold.count:
            return False
        hits.clear()
        tally.total = 0
        return True

    def _on_match(
        self,
        index: RuleIndex,
        rule: Rule,
        record: Record,
        position: int,
        records: Sequence[Record],
        stream: RuleStream,
    ) -> Event | None:
        if rule.spec.threshold is not None and not self._reached(index, rule, record, 1):
            return None
        return self._open_event(index, rule, record, position, records, stream)

    def _open_event(
        self,
        index: RuleIndex,
        rule: Rule,
        record: Record,
        position: int,
        records: Sequence[Record],
        stream: RuleStream,
    ) -> Event | None:
        """A new event, or None when the match joins an event still open in its dedupe window."""
        spec = rule.spec
        window = spec.dedupe.within * _US
        # Whatever a rule groups by, one event never stands for several hosts or ranks: the
        # lines of the ranks of a job often carry no pid (c10, torch_npu), and an operator must
        # see which ranks failed and which did not.
        source = record.source
        dedupe_key = (
            rule.id,
            source.host if source is not None else None,
            record.rank,
            *(getter(record) for getter in index.dedupe_getters[rule]),
        )
        held = self._open.get(dedupe_key)
        timestamp = record.timestamp_us
        if (
            held is not None
            and window > 0
            and (timestamp is None or held.first_us is None or timestamp <= held.first_us + window)
        ):
            held.count += 1
            if timestamp is not None:
                held.last_us = timestamp
            return None
        fields = rule.extractor(record) if rule.extractor is not None else {}
        previous = _before(spec.context.before, position, records, stream)
        event = Event(rule, record, fields, [r.original for r in previous])
        if record.offset is not None and _offsets_known(previous):
            first = previous[0].offset if previous else record.offset
            event.context_span = (cast(int, first), record.offset)
        event.context_complete = spec.context.after == 0
        if window > 0:
            self._open[dedupe_key] = event
        self._waiting.append(event)
        return event

    def _forget(self, event: Event) -> None:
        for key, held in list(self._open.items()):
            if held is event:
                del self._open[key]

    @staticmethod
    def _fill_after(
        records: Sequence[Record], stream: RuleStream, new_pending: list[tuple[Event, int]]
    ) -> None:
        still: list[tuple[Event, int]] = []
        waiting = [(event, needed, 0) for event, needed in stream.pending]
        waiting += [
            (event, event.rule.spec.context.after, position + 1) for event, position in new_pending
        ]
        for event, needed, start in waiting:
            following = records[start : start + needed]
            event.after.extend(record.original for record in following)
            if following and event.context_span is not None:
                last = cast(int, following[-1].offset)
                known = _offsets_known(following)
                event.context_span = (event.context_span[0], last) if known else None
            if len(following) < needed:
                still.append((event, needed - len(following)))
            else:
                event.context_complete = True
        stream.pending = still


def _merge(index: RuleIndex, plan: Sequence[Entry], extra: list[Entry]) -> list[Entry]:
    have = {rule for rule, _ in plan}
    merged = list(plan) + [entry for entry in extra if entry[0] not in have]
    return sorted(merged, key=lambda entry: index.order[entry[0]])


def _before(
    count: int, position: int, records: Sequence[Record], stream: RuleStream
) -> list[Record]:
    if count == 0:
        return []
    previous = list(records[max(0, position - count) : position])
    missing = count - len(previous)
    if missing > 0 and stream.window:
        previous = list(stream.window)[-missing:] + previous
    return previous


def _offsets_known(records: Iterable[Record]) -> bool:
    """Whether every record says where it is in its file: an event's context is then kept in
    the journal as the span of offsets it covers, not as text (see journal/event_context.py)."""
    return all(record.offset is not None for record in records)


def events_by_time(events: list[Event]) -> list[Event]:
    """Events by their first time (those without one last), the order they came in on a tie:
    the order they are handed out in (and a scan's parts merged in, scan/merge.py)."""
    return sorted(events, key=lambda e: (e.first_us is None, e.first_us or 0))
