"""The rule engine: records in, events out, with thresholds, dedupe and context.

A batch of records is dispatched at C speed (rules/candidates.py): only the records that can
match a rule are looked at, each with the profile of its signature (rules/profiles.py), the rules
it matches without a test and the tests left; a test that needs a word of the text runs only on
the records where the batch's one search found one (rules/word_search.py). Counting rules (a
DEBUG flood) are tallied per batch from the level counts.

Per stream (one file), a `RuleStream` keeps the records before the current one (context) and the
events still waiting for the records after them. An event is handed out by `drain()` once its
after-context is complete and its dedupe window has passed in log time (or at `flush()`), with
the number of matches it stands for.

`replace()` swaps in a new rule set at once: the index is one object, built aside and assigned in
one step; threshold state carries over for the rules that remain (by id).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress
from operator import attrgetter
from typing import Any, cast

from npuwatch.records import BatchIndex, Record, SourceInfo
from npuwatch.rules.candidates import candidates, profiled, words_found
from npuwatch.rules.events import Event
from npuwatch.rules.index import RuleIndex, build_index
from npuwatch.rules.loader import RuleSet
from npuwatch.rules.model import Rule
from npuwatch.rules.pack import RuleLoadError
from npuwatch.rules.profiles import most_specific

_US = 1_000_000
_LEVEL = attrgetter("level")
_FLAGS = attrgetter("flags")
_ORIGINAL = attrgetter("original")
_OFFSET = attrgetter("offset")


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
        self.now_us = 0
        """The latest log time of the stream's records (µs; 0: none had a time yet)."""

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
        positions, literal_hits = candidates(
            index, levels, flagged, loggers, records, stream.kind, raw
        )
        chosen = profiled(index, positions, literal_hits, records, stream.kind)
        found = words_found(index, chosen, records)
        order, facts = index.order, index.facts
        open_events = self._open
        counts: dict[Rule, int] = {}
        new_pending: list[tuple[Event, int]] = []
        for position, profile in chosen:
            matched = profile.matched
            record = records[position]
            if profile.tests:
                held = found.get(position, 0)
                if held or profile.untargeted:
                    passed = [
                        rule
                        for rule, test, needs in profile.tests
                        if (needs is None or needs & held) and test(record)
                    ]
                    if passed:
                        matched = most_specific(
                            sorted((*profile.fixed, *passed), key=order.__getitem__)
                        )
            read: Callable[[Record], tuple[Any, ...]] | None = None
            tail: tuple[Any, ...] = ()
            for rule in matched:
                counts[rule] = counts.get(rule, 0) + 1
                rule_id, window, tail_of, thresholded, after = facts[rule]
                if thresholded and not self._reached(index, rule, record, 1):
                    continue
                if tail_of is not read:  # rules that dedupe alike share the record's tail
                    read = tail_of
                    tail = read(record)
                key = (rule_id, tail)
                if _joins(open_events.get(key), window, record):
                    continue  # most matches: one more of an event still open
                event = self._new_event(index, rule, record, position, records, stream, key)
                if after:
                    new_pending.append((event, position))
        for rule, count in counts.items():
            self.match_counts[rule.id] += count
        self._fill_after(records, stream, new_pending)
        stream.window.extend(records)
        last = records[-1].timestamp_us
        if last is not None:
            self._now_us = max(self._now_us, last)
            stream.now_us = max(stream.now_us, last)

    def drain(
        self, now_us: int | None = None, recent: Mapping[SourceInfo | None, int] | None = None
    ) -> list[Event]:
        """Events whose dedupe window has passed (in log time, or by `now_us`) and whose
        context is complete. An event of one of the `recent` sources (files that wrote lately,
        each with its own log time: `RuleStream.now_us`) closes by its own file's time only:
        while the agent catches up on old files, the log time of the others (or the wall clock)
        is far past its window before its file's last record, which the reader holds until the
        file is quiet, has joined it."""
        now = self._now_us if now_us is None else now_us
        ready, waiting = [], []
        for event in self._waiting:
            window = event.rule.spec.dedupe.within * _US
            limit = recent.get(event.trigger.source, now) if recent else now
            closed = event.first_us is None or event.first_us + window < limit
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
        rule_id, window, tail_of, _, _ = index.facts[rule]
        key = (rule_id, tail_of(record))
        if _joins(self._open.get(key), window, record):
            return None
        return self._new_event(index, rule, record, position, records, stream, key)

    def _new_event(
        self,
        index: RuleIndex,
        rule: Rule,
        record: Record,
        position: int,
        records: Sequence[Record],
        stream: RuleStream,
        dedupe_key: tuple[Any, ...],
    ) -> Event:
        """The event of a match that joins none still open, kept open under `dedupe_key`."""
        spec = rule.spec
        fields = rule.extractor(record) if rule.extractor is not None else {}
        previous = _before(spec.context.before, position, records, stream)
        event = Event(rule, record, fields, list(map(_ORIGINAL, previous)))
        if record.offset is not None and _offsets_known(previous):
            first = previous[0].offset if previous else record.offset
            event.context_span = (cast(int, first), record.offset)
        event.context_complete = spec.context.after == 0
        if index.facts[rule].window > 0:
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


def _joins(held: Event | None, window: float, record: Record) -> bool:
    """Whether a match joins `held`, the event still open under its dedupe key (counted on it
    then): within `window` µs of the event's first match, in log time."""
    if held is None or window <= 0:
        return False
    timestamp = record.timestamp_us
    first = held.first_us
    if timestamp is not None and first is not None and timestamp > first + window:
        return False
    held.count += 1
    if timestamp is not None:
        held.last_us = timestamp
    return True


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
    return None not in map(_OFFSET, records)


def events_by_time(events: list[Event]) -> list[Event]:
    """Events by their first time (those without one last), the order they came in on a tie:
    the order they are handed out in (and a scan's parts merged in, scan/merge.py)."""
    return sorted(events, key=lambda e: (e.first_us is None, e.first_us or 0))
