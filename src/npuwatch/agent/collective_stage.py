"""What the agent ships for the cluster correlator, made as records pass the rules thread.

The extractor of `parsers/hccl` reads every record the agent reads, at every level. Its facts
go into one process document per host, pid and communicator (parsers/hccl/shipped.py), written
to the journal as a state when a fact is new (at most once a second, so that the burst of a
communicator's init is one document) or said again (at most once a minute); its events become
event rows beside the rule events. Every `heartbeat_interval` a heartbeat says the agent is
alive and which processes still write. What it keeps is bounded: a process silent for
`forget_after` is forgotten (its documents stay in the journal and the search engine, and are
taken up from the journal if it speaks again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from npuwatch.handoff import EventRow, StateRow
from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.reader import JournalReader
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact
from npuwatch.parsers.hccl.shipped import (
    TOPOLOGY_STREAM,
    Heartbeat,
    ProcessFacts,
    event_document,
    event_document_id,
    heartbeat_document_id,
)
from npuwatch.records import Record


class StateLookup(Protocol):
    """A state of the journal by id (what the agent wrote before it was restarted)."""

    def __call__(self, id_: str) -> StateRow | None: ...

    def close(self) -> None: ...


class NoStates:
    """A lookup for a journal that holds no states (tests, a first start)."""

    def __call__(self, id_: str) -> StateRow | None:
        return None

    def close(self) -> None:
        pass


class JournalStates:
    """States of the journal by id, for the thread that asks: its reader is opened there at the
    first question (an SQLite connection stays in the thread that made it)."""

    def __init__(self, directory: Path, notice: DamageNotice | None = None) -> None:
        self._directory = directory
        self._notice = notice
        self._reader: JournalReader | None = None

    def __call__(self, id_: str) -> StateRow | None:
        if self._reader is None:
            self._reader = JournalReader(self._directory, notice=self._notice)
        return self._reader.state(id_)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


_WRITE_NEW_S = 1.0
_WRITE_AGAIN_S = 60.0
_HEARTBEAT_PROCESSES = 256
_CRITICAL_KINDS = frozenset({"cqe", "cluster_exception"})


@dataclass(frozen=True)
class CollectiveSettings:
    heartbeat_interval_s: float = 30.0
    quiet_close_s: float = 5.0
    """A process quiet this long has its open failure blocks closed (its last block, when it
    died, has no line after it to close it)."""
    forget_after_s: float = 3600.0
    heartbeat_window_s: float = 6 * 3600.0
    """Processes heard within this time are listed in the heartbeat as still writing (a
    healthy job at CANN's default level writes little)."""


@dataclass
class _Heard:
    newest_us: int
    at_s: float
    """Monotonic time of its last record."""
    closed: bool = False


class CollectiveWatch:
    """Facts, collective events and heartbeats from the records of one agent."""

    def __init__(
        self,
        host: str,
        agent_version: str,
        settings: CollectiveSettings,
        lookup: StateLookup | None = None,
    ) -> None:
        self._host = host
        self._version = agent_version
        self._settings = settings
        self._lookup = lookup or NoStates()
        self._extractor = CollectiveExtractor()
        self._book: dict[str, ProcessFacts] = {}
        self._changes: dict[str, tuple[str, float]] = {}
        """Documents changed since written: `new` or `again`, and since when."""
        self._written_at: dict[str, float] = {}
        self._heard: dict[tuple[str, int], _Heard] = {}
        self._next_beat = 0.0

    def observe(
        self,
        records: Sequence[Record],
        file_key: str,
        now_s: float,
        first_line: int | None = None,
    ) -> tuple[list[EventRow], list[StateRow]]:
        """Event rows and process documents from one batch of records (`first_line`: the line
        number of the first, where known, for the evidence)."""
        rows = self._take(self._extractor.feed(records, first_line), file_key, now_s)
        return rows, self._due(now_s, wall_us=None)

    def tick(self, now_s: float, wall_us: int) -> tuple[list[EventRow], list[StateRow]]:
        """What time alone makes due: failure blocks of quiet processes closed, documents
        whose pause is over, the heartbeat; processes long silent forgotten."""
        settings = self._settings
        rows: list[EventRow] = []
        for (host, pid), heard in list(self._heard.items()):
            quiet = now_s - heard.at_s
            if quiet >= settings.quiet_close_s and not heard.closed:
                heard.closed = True
                rows.extend(self._take(self._extractor.close(host, pid), "", now_s))
            if quiet >= settings.forget_after_s:
                self._forget(host, pid)
        states = self._due(now_s, wall_us)
        return rows, states

    def finish(self, now_s: float, wall_us: int) -> tuple[list[EventRow], list[StateRow]]:
        """The agent stops: every open block closed, every changed document written now, and a
        last heartbeat (what it saw writing, and when it was last alive)."""
        rows = self._take(self._extractor.finish(), "", now_s)
        for id_, (change, _) in self._changes.items():
            self._changes[id_] = (change, float("-inf"))  # due now, whatever their pause
            self._written_at.pop(id_, None)
        self._next_beat = now_s
        self._lookup.close()
        return rows, self._due(now_s, wall_us)

    # -- facts and events ---------------------------------------------------------------------

    def _take(self, items: list[Extracted], file_key: str, now_s: float) -> list[EventRow]:
        rows: list[EventRow] = []
        for item in items:
            if isinstance(item, Fact):
                if item.name == "heard":
                    self._note_heard(item, now_s)
                else:
                    self._note_fact(item, now_s)
            else:
                rows.append(self._event_row(item, file_key))
        return rows

    def _note_heard(self, fact: Fact, now_s: float) -> None:
        key = (fact.process.host, fact.process.pid)
        heard = self._heard.get(key)
        newest = int(fact.value)
        if heard is None:
            self._heard[key] = _Heard(newest, now_s)
        else:
            heard.newest_us = max(heard.newest_us, newest)
            heard.at_s = now_s
            heard.closed = False

    def _note_fact(self, fact: Fact, now_s: float) -> None:
        process = fact.process
        facts = ProcessFacts(process.host, process.pid, fact.communicator)
        known = self._book.get(facts.id)
        if known is None:
            known = self._book[facts.id] = self._taken_up(facts)
        change = known.add(fact)
        if change is None:
            return
        pending = self._changes.get(facts.id)
        if pending is None:
            self._changes[facts.id] = (change, now_s)
        elif change == "new" and pending[0] != "new":
            self._changes[facts.id] = ("new", pending[1])

    def _taken_up(self, facts: ProcessFacts) -> ProcessFacts:
        """The process document the journal holds, if the agent wrote one before (a restart,
        or a process forgotten and speaking again): new facts are added to it, not written over
        it."""
        row = self._lookup(facts.id)
        if row is None:
            return facts
        try:
            return ProcessFacts.from_document(json.loads(row.document))
        except (ValueError, KeyError, TypeError):
            return facts

    def _forget(self, host: str, pid: int) -> None:
        self._extractor.forget(host, pid)
        self._heard.pop((host, pid), None)
        for id_ in [i for i, f in self._book.items() if (f.host, f.pid) == (host, pid)]:
            if id_ not in self._changes:
                del self._book[id_]
                self._written_at.pop(id_, None)

    def _event_row(self, event: CollectiveEvent, file_key: str) -> EventRow:
        evidence = event.evidence[0] if event.evidence else None
        return EventRow(
            id=event_document_id(event),
            timestamp_us=event.time_us,
            rule=f"collective.{event.kind}",
            category="collective",
            severity="critical" if event.kind in _CRITICAL_KINDS else "error",
            level="ERROR",
            logger=event.module,
            code=event.codes[0] if event.codes else None,
            device=None,
            host=event.process.host,
            path=evidence.file if evidence else None,
            file_key=file_key or None,
            offset=None,
            pid=event.process.pid,
            count=event.count,
            document=json.dumps(event_document(event), ensure_ascii=False),
        )

    # -- documents ----------------------------------------------------------------------------

    def _due(self, now_s: float, wall_us: int | None) -> list[StateRow]:
        states: list[StateRow] = []
        for id_, (change, since) in list(self._changes.items()):
            # A change waits a second for the rest of its burst (a communicator's init is a
            # burst of lines); a fact said again waits until the last write is a minute old.
            if now_s - since < _WRITE_NEW_S:
                continue
            if (
                change == "again"
                and now_s - self._written_at.get(id_, -_WRITE_AGAIN_S) < _WRITE_AGAIN_S
            ):
                continue
            facts = self._book[id_]
            document = facts.to_document(self._version)
            states.append(
                StateRow(id_, TOPOLOGY_STREAM, facts.latest_us() or 0, json.dumps(document))
            )
            self._written_at[id_] = now_s
            del self._changes[id_]
        if wall_us is not None and now_s >= self._next_beat:
            self._next_beat = now_s + self._settings.heartbeat_interval_s
            states.append(self._heartbeat(now_s, wall_us))
        return states

    def _heartbeat(self, now_s: float, wall_us: int) -> StateRow:
        window = self._settings.heartbeat_window_s
        writing = sorted(
            ((heard.at_s, pid, heard.newest_us) for (host, pid), heard in self._heard.items()
             if host == self._host and now_s - heard.at_s <= window),
            reverse=True,
        )[:_HEARTBEAT_PROCESSES]  # fmt: skip
        beat = Heartbeat(
            self._host,
            wall_us,
            self._settings.heartbeat_interval_s,
            {pid: newest for _, pid, newest in writing},
            self._version,
        )
        return StateRow(
            heartbeat_document_id(self._host),
            TOPOLOGY_STREAM,
            wall_us,
            json.dumps(beat.to_document()),
        )
