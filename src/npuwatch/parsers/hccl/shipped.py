"""The extractor's output as the agents ship it, and back (docs/adr/0003-live-incidents.md).

Three kinds of document, each a plain JSON object:

* a **process document** per host, pid and communicator (`-` for the facts of the process
  itself): every distinct fact the logs said, with its first time and its latest few. It is
  replaced whole when it changes, under an id made from host, pid and communicator;
* an **event document** per collective-failure event, under an id made from what the event
  says, so that a replay gives the same document;
* a **heartbeat** per agent, replaced every interval: its clock, and each process still
  writing with the time of its newest line.

The cluster correlator turns them back into the engine's own Facts and CollectiveEvents, which
the Correlator takes as it takes them from `scan`. Pure: dictionaries in and out.
"""

from __future__ import annotations

import base64
import hashlib
from bisect import insort
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from npuwatch.bounded_numbers import document_float, document_int
from npuwatch.parsers.hccl.model import CollectiveEvent, Evidence, Fact, ProcessKey
from npuwatch.records import format_timestamp

TOPOLOGY_STREAM = "topology"
"""The plain index of process documents and heartbeats: `logs-ascend.topology-<ns>`."""
TIMES_KEPT = 8
"""Times kept of one fact: the first, and the latest ones (the correlator cuts lives and
corrects clocks with them; a fact said thousands of times keeps its newest)."""
NO_COMMUNICATOR = "-"
_FACT_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}
_EVENT_FIELDS = tuple(
    f.name for f in fields(CollectiveEvent) if f.name not in ("process", "evidence", "problems")
)


def document_id(*parts: object) -> str:
    digest = hashlib.blake2b("\0".join(map(str, parts)).encode(), digest_size=15).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii")


def process_document_id(host: str, pid: int, communicator: str | None) -> str:
    return document_id("process", host, pid, communicator or NO_COMMUNICATOR)


def heartbeat_document_id(host: str) -> str:
    return document_id("heartbeat", host)


# -- process documents --------------------------------------------------------------------------


def _typed(value: str | int | float | bool) -> tuple[str, str]:
    kind = _FACT_TYPES.get(type(value), "str")
    if kind == "bool":
        return kind, "true" if value else "false"
    return kind, repr(value) if kind == "float" else str(value)


def _value(kind: str, text: str) -> str | int | float | bool:
    if kind == "bool":
        return text == "true"
    if kind == "int":
        return document_int(text)
    if kind == "float":
        return float(text)
    return text


@dataclass
class ProcessFacts:
    """Every distinct fact said of one process (and communicator), and when."""

    host: str
    pid: int
    communicator: str | None
    times: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    """(name, type, value as text) → the first time and the latest ones, in order."""
    untimed: set[tuple[str, str, str]] = field(default_factory=set)
    """Facts said only by lines without a time."""

    @property
    def id(self) -> str:
        return process_document_id(self.host, self.pid, self.communicator)

    def add(self, fact: Fact) -> str | None:
        """Take a fact in; what changed: `new` (a fact not said before), `again` (said again
        at a time worth keeping), or None (nothing)."""
        key = (fact.name, *_typed(fact.value))
        time_us = fact.time_us
        kept = self.times.get(key)
        if time_us is None:
            if kept is not None or key in self.untimed:
                return None
            self.untimed.add(key)
            return "new"
        if kept is None:
            self.times[key] = [time_us]
            return "new" if key not in self.untimed else "again"
        if time_us in kept:
            return None
        full = len(kept) >= TIMES_KEPT
        if full and kept[0] < time_us < kept[1]:
            return None  # between the first and the latest kept: not one to keep
        insort(kept, time_us)
        if full:
            del kept[1]  # the oldest of the latest goes; the first stays
        return "again"

    def facts(self) -> list[Fact]:
        """The engine's facts again, one per time kept."""
        key = ProcessKey(self.host, self.pid)
        found: list[Fact] = []
        for (name, kind, text), times in self.times.items():
            value = _value(kind, text)
            found.extend(Fact(key, name, value, t, self.communicator) for t in times)  # type: ignore[arg-type]
        for name, kind, text in self.untimed:
            if (name, kind, text) not in self.times:
                found.append(Fact(key, name, _value(kind, text), None, self.communicator))  # type: ignore[arg-type]
        return found

    def latest_us(self) -> int | None:
        return max((times[-1] for times in self.times.values()), default=None)

    def to_document(self, agent_version: str) -> dict[str, Any]:
        latest = self.latest_us()
        facts = [
            {"name": name, "type": kind, "value": text, "times": times}
            for (name, kind, text), times in sorted(self.times.items())
        ]
        facts.extend(
            {"name": name, "type": kind, "value": text, "times": []}
            for name, kind, text in sorted(self.untimed - self.times.keys())
        )
        summary = {
            name: _value(kind, text)
            for (name, kind, text) in self.times
            if name not in ("hccl_env", "resumed", "events_dropped")
        }
        return {
            "@timestamp": format_timestamp(latest) if latest is not None else None,
            "event": {"kind": "state", "dataset": "ascend.topology", "module": "npuwatch"},
            "host": {"name": self.host},
            "process": {"pid": self.pid},
            "agent": {"version": agent_version},
            "ascend": {
                "doc_id": self.id,
                "topology": {
                    "communicator": self.communicator or NO_COMMUNICATOR,
                    "summary": summary,
                    "facts": facts,
                },
            },
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ProcessFacts:
        """The process facts a document holds; KeyError or ValueError when it is not one."""
        topology = document["ascend"]["topology"]
        communicator = topology.get("communicator")
        found = cls(
            str(document["host"]["name"]),
            document_int(document["process"]["pid"]),
            None if communicator in (None, NO_COMMUNICATOR) else str(communicator),
        )
        for item in topology["facts"]:
            key = (str(item["name"]), str(item["type"]), str(item["value"]))
            _value(key[1], key[2])  # a value that does not read as its type is refused here
            times = sorted(document_int(t) for t in item.get("times") or ())
            if times:
                found.times[key] = times
            else:
                found.untimed.add(key)
        return found


# -- event documents ----------------------------------------------------------------------------


def event_document_id(event: CollectiveEvent) -> str:
    return document_id(
        "event",
        event.process.host,
        event.process.pid,
        event.kind,
        event.time_us,
        event.communicator,
        event.tag,
        event.op_index,
        event.remote_rank,
        event.remote_ip,
        event.remote_device,
    )


def event_document(event: CollectiveEvent) -> dict[str, Any]:
    """The event as the search engine keeps it, beside the rule events."""
    collective: dict[str, Any] = {"kind": event.kind, "time_us": event.time_us}
    for name in _EVENT_FIELDS:
        value = getattr(event, name)
        # (0 is a value: rank 0, op index 0, device 0; `0 in (False,)` is true in Python)
        empty = isinstance(value, tuple | list) and not value
        if name not in collective and value is not None and value is not False and not empty:
            collective[name] = list(value) if isinstance(value, tuple) else value
    first = event.evidence[0].text if event.evidence else ""
    return {
        "@timestamp": format_timestamp(event.time_us) if event.time_us is not None else None,
        "message": f"collective {event.kind}: {first}",
        "event": {
            "kind": "event",
            "module": "npuwatch",
            "action": f"collective.{event.kind}",
            "category": ["network"],
        },
        "host": {"name": event.process.host},
        "process": {"pid": event.process.pid},
        "ascend": {
            "doc_id": event_document_id(event),
            "collective": collective,
            "evidence": [
                {
                    "file": e.file,
                    "line": e.line,
                    "text": e.text,
                    "time_us": e.time_us,
                    "offset": e.offset,
                }
                for e in event.evidence
            ],
            "problems": list(event.problems),
        },
    }


def event_from_document(document: Mapping[str, Any]) -> CollectiveEvent:
    """The engine's event again; KeyError, TypeError or ValueError when it is not one."""
    ascend = document["ascend"]
    collective = dict(ascend["collective"])
    key = ProcessKey(str(document["host"]["name"]), document_int(document["process"]["pid"]))
    values = {name: collective[name] for name in _EVENT_FIELDS if name in collective}
    for name in ("codes", "connected_ranks"):
        if name in values:
            values[name] = tuple(values[name])
    event = CollectiveEvent(process=key, **values)
    event.evidence = [
        Evidence(
            item.get("file"),
            item.get("line"),
            str(item.get("text", "")),
            item.get("time_us"),
            item.get("offset"),
        )
        for item in ascend.get("evidence", ())
    ]
    event.problems = [str(problem) for problem in ascend.get("problems", ())]
    return event


# -- heartbeats ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heartbeat:
    """An agent alive at `clock_us`, and the processes still writing (pid → newest line)."""

    host: str
    clock_us: int
    interval_s: float
    processes: dict[int, int]
    agent_version: str = ""

    def to_document(self) -> dict[str, Any]:
        return {
            "@timestamp": format_timestamp(self.clock_us),
            "event": {"kind": "state", "dataset": "ascend.heartbeat", "module": "npuwatch"},
            "host": {"name": self.host},
            "agent": {"version": self.agent_version},
            "ascend": {
                "doc_id": heartbeat_document_id(self.host),
                "heartbeat": {
                    "clock_us": self.clock_us,
                    "interval_s": self.interval_s,
                    "processes": [
                        {"pid": pid, "newest_us": newest}
                        for pid, newest in sorted(self.processes.items())
                    ],
                },
            },
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Heartbeat:
        beat = document["ascend"]["heartbeat"]
        return cls(
            str(document["host"]["name"]),
            document_int(beat["clock_us"]),
            document_float(beat["interval_s"]),
            {
                document_int(item["pid"]): document_int(item["newest_us"])
                for item in beat.get("processes", ())
            },
            str(document.get("agent", {}).get("version", "")),
        )

    def heard(self) -> Iterable[Fact]:
        """The engine's `heard` facts: each process wrote until its newest line."""
        for pid, newest in self.processes.items():
            yield Fact(ProcessKey(self.host, pid), "heard", newest, newest)
