"""The agents' documents as the root-cause engine's input: what each says that is new.

A process document is read again every time its agent rewrites it; only the facts it did not
hold before are fed. An event is fed once, by id. A heartbeat gives each process its newest
line (the engine's `heard` facts) and says which hosts are alive. Everything fed is kept, so
that the engine can be made again from it (a compaction, when processes long gone are dropped),
and a document that is not what it claims to be is a problem, not an exception. The version of
each topology document read is kept too: what is forgotten is deleted from the index only if no
agent has written it again since.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from npuwatch.cluster.incident_document import iso_us
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted
from npuwatch.parsers.hccl.shipped import (
    Heartbeat,
    ProcessFacts,
    event_from_document,
    heartbeat_document_id,
)

PROBLEMS_KEPT = 20

Version = tuple[int, int]
"""A document's `_seq_no` and `_primary_term` as read."""


@dataclass
class Forgotten:
    """What a compaction dropped: the topology documents (by `_id`, with the version read, None
    when the hit had none) and how many events."""

    documents: dict[str, Version | None] = field(default_factory=dict)
    events: int = 0

    def __len__(self) -> int:
        return len(self.documents) + self.events


class CorrelationInput:
    """Every document read so far, by id, and what each gave the engine."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.processes: dict[str, ProcessFacts] = {}
        self.events: dict[str, CollectiveEvent] = {}
        self.heartbeats: dict[str, Heartbeat] = {}
        """By host: the newest heartbeat of each agent."""
        self.versions: dict[str, Version] = {}
        """The version read of each topology document (process or heartbeat), by `_id`."""
        self.ingested_us: dict[str, int] = {}
        """When the engine took each document read (its `event.ingested`, stamped by the
        ingest pipeline with the engine's clock), by `_id`: what forgetting goes by."""
        self._wall = wall
        self.problems: list[str] = []
        self.unreadable = 0

    def take(self, hit: Mapping[str, Any]) -> list[Extracted]:
        """What one search hit gives the engine that it did not have."""
        source = hit.get("_source") or {}
        dataset = (source.get("event") or {}).get("dataset")
        self._keep_ingested(hit, source)
        try:
            if dataset in ("ascend.topology", "ascend.heartbeat"):
                self._keep_version(hit)
            if dataset == "ascend.topology":
                return self._process(source)
            if dataset == "ascend.heartbeat":
                return self._heartbeat(source)
            if "collective" in (source.get("ascend") or {}):
                return self._event(str(hit.get("_id")), source)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            self._problem(f"document {hit.get('_id')} of {hit.get('_index')}: {error!r}")
            return []
        self._problem(f"document {hit.get('_id')} of {hit.get('_index')} is not an agent's")
        return []

    def _keep_ingested(self, hit: Mapping[str, Any], source: Mapping[str, Any]) -> None:
        """The document's ingest time; where it has none (written past the pipeline), when it
        was read: it is kept a lookback from now, never forgotten at once."""
        event = source.get("event")
        stamped = event.get("ingested") if isinstance(event, Mapping) else None
        self.ingested_us[str(hit.get("_id"))] = _epoch_us(stamped) or int(self._wall() * 1e6)

    def _keep_version(self, hit: Mapping[str, Any]) -> None:
        if "_seq_no" in hit and "_primary_term" in hit:
            self.versions[str(hit["_id"])] = (int(hit["_seq_no"]), int(hit["_primary_term"]))

    def _process(self, source: Mapping[str, Any]) -> list[Extracted]:
        facts = ProcessFacts.from_document(source)
        before = self.processes.get(facts.id)
        self.processes[facts.id] = facts
        if before is None:
            return list(facts.facts())
        known = set(before.facts())
        return [fact for fact in facts.facts() if fact not in known]

    def _event(self, id_: str, source: Mapping[str, Any]) -> list[Extracted]:
        if id_ in self.events:
            return []
        event = self.events[id_] = event_from_document(source)
        return [event]

    def _heartbeat(self, source: Mapping[str, Any]) -> list[Extracted]:
        beat = Heartbeat.from_document(source)
        before = self.heartbeats.get(beat.host)
        if before is not None and before.clock_us >= beat.clock_us:
            return []
        self.heartbeats[beat.host] = beat
        heard: list[Extracted] = []
        for fact in beat.heard():
            if before is None or before.processes.get(fact.process.pid) != fact.value:
                heard.append(fact)
        return heard

    def everything(self) -> Iterator[Extracted]:
        """All that was fed, for an engine made again from scratch."""
        for facts in self.processes.values():
            yield from facts.facts()
        yield from self.events.values()
        for beat in self.heartbeats.values():
            yield from beat.heard()

    def forget_before(self, cutoff_us: int) -> Forgotten:
        """Drop what no fault can still need: agents whose heartbeat the engine has not taken
        since `cutoff_us`, and the processes and events it took before then that no recent
        heartbeat lists. By ingest time, never by the time in the logs: a backfill of logs
        weeks old, or a host whose clock is a day off, is as recent as when it was shipped."""
        forgotten = Forgotten()
        for host in list(self.heartbeats):
            id_ = heartbeat_document_id(host)
            if self._taken_before(id_, cutoff_us):
                del self.heartbeats[host]
                forgotten.documents[id_] = self.versions.pop(id_, None)
                self.ingested_us.pop(id_, None)
        listed = {(host, pid) for host, beat in self.heartbeats.items() for pid in beat.processes}
        gone = [
            id_
            for id_, facts in self.processes.items()
            if self._taken_before(id_, cutoff_us) and (facts.host, facts.pid) not in listed
        ]
        for id_ in gone:
            del self.processes[id_]
            forgotten.documents[id_] = self.versions.pop(id_, None)
            self.ingested_us.pop(id_, None)
        old = [id_ for id_ in self.events if self._taken_before(id_, cutoff_us)]
        for id_ in old:
            del self.events[id_]
            self.ingested_us.pop(id_, None)
        forgotten.events = len(old)
        return forgotten

    def _taken_before(self, id_: str, cutoff_us: int) -> bool:
        return self.ingested_us.get(id_, cutoff_us) < cutoff_us

    def alive(self, host: str, now_us: int) -> bool | None:
        """Whether the agent of `host` beat recently (None: it never did)."""
        beat = self.heartbeats.get(host)
        if beat is None:
            return None
        # When the engine took it, not the host's clock (which may be a day off).
        taken_us = self.ingested_us.get(heartbeat_document_id(host), beat.clock_us)
        return now_us - taken_us <= int(3 * beat.interval_s * 1_000_000)

    def _problem(self, text: str) -> None:
        self.unreadable += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(text)


def _epoch_us(stamped: object) -> int | None:
    """Microseconds since the epoch of an `event.ingested` as the engine stores it (an ISO
    time, or epoch milliseconds); None for anything else."""
    if isinstance(stamped, bool):
        return None
    if isinstance(stamped, int | float):
        return int(stamped * 1000)
    try:
        return iso_us(stamped)
    except ValueError:
        return None
