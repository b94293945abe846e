"""The incidents the correlator has written, and which of them a new verdict revises.

An incident's id is made once, when it is first written; every later verdict about the same
fault must find it again, however its first failure time moved as late hosts reported. A verdict
is the same fault as a written incident when their times overlap (within the slack of a class
window) and they share the communicator or a process. The book is rebuilt from the incidents
index at every start, so the correlator keeps no state of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from npuwatch.cluster.incident_document import iso_us
from npuwatch.correlation.incident import Incident

SLACK_US = 3600 * 1_000_000
"""How far apart in time a verdict and a written incident may start and still be one fault."""


def _processes(places: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, int]]:
    return frozenset(
        (str(place.get("host") or ""), int(place["pid"]))
        for place in places
        if place.get("pid") is not None
    )


@dataclass
class Tracked:
    """A written incident: its id, the version to write over, and its stored content."""

    id: str
    version: tuple[int, int] | None
    incident: dict[str, Any]
    changed_at_us: int
    """Wall time its verdict last changed (what the quiet period counts from)."""

    @property
    def closed(self) -> bool:
        return bool(self.incident.get("closed"))

    @property
    def merged(self) -> bool:
        """Closed as an earlier verdict of a fault another incident is written under: never
        revised again (it would take the verdicts from that one)."""
        return self.closed and str(self.incident.get("close_reason") or "").startswith("merged")

    @property
    def early(self) -> bool:
        """A verdict given before the facts were in: provisional, naming no root cause that
        left logs."""
        roots = self.incident.get("root_cause") or []
        return bool(self.incident.get("provisional")) and not any(p.get("has_logs") for p in roots)

    @property
    def kind(self) -> str:
        return str(self.incident.get("kind"))

    @property
    def communicator(self) -> str | None:
        found = self.incident.get("communicator")
        return None if found is None else str(found)

    @property
    def window(self) -> tuple[int, int] | None:
        first = iso_us(self.incident.get("first"))
        last = iso_us(self.incident.get("last")) or first
        return None if first is None or last is None else (first, last)

    @property
    def processes(self) -> frozenset[tuple[str, int]]:
        places = [*self.incident.get("root_cause", ()), *self.incident.get("victims", ())]
        return _processes(places)


class IncidentBook:
    """Every incident written (or read back at the start), by id."""

    def __init__(self) -> None:
        self.tracked: dict[str, Tracked] = {}

    def load(self, hit: Mapping[str, Any], now_us: int) -> Tracked | None:
        """Take an incident document as stored (a search hit or a get)."""
        source = hit.get("_source") or {}
        incident = (source.get("ascend") or {}).get("incident")
        if not isinstance(incident, dict):
            return None
        version = None
        if hit.get("_seq_no") is not None and hit.get("_primary_term") is not None:
            version = (int(hit["_seq_no"]), int(hit["_primary_term"]))
        changed = iso_us(incident.get("updated")) or now_us
        tracked = Tracked(str(hit["_id"]), version, incident, changed)
        self.tracked[tracked.id] = tracked
        return tracked

    def match(self, incident: Incident, taken: set[str]) -> Tracked | None:
        """The written incident this verdict revises (not one in `taken`), or None."""
        best: tuple[int, int, Tracked] | None = None
        for tracked in self.tracked.values():
            if tracked.id in taken or tracked.merged:
                continue
            shared = _shared(tracked, incident)
            if shared is None:
                continue
            assert tracked.window is not None and incident.first_us is not None
            score = (shared, -abs(tracked.window[0] - incident.first_us))
            if best is None or score > best[:2]:
                best = (*score, tracked)
        return None if best is None else best[2]

    def same_fault(self, tracked: Tracked, incident: Incident) -> bool:
        """Whether a written incident and a verdict speak of one fault: as `match` finds them,
        or, for an early verdict (provisional, no root cause that left logs), more loosely:
        its times may have been wrong (a line misstamped) and it may have named nobody yet."""
        if _shared(tracked, incident) is not None:
            return True
        return tracked.early and _loosely_shared(tracked, incident)

    def open(self) -> list[Tracked]:
        return [tracked for tracked in self.tracked.values() if not tracked.closed]


def _shared(tracked: Tracked, incident: Incident) -> int | None:
    """How many processes a written incident and a verdict share, when they are one fault
    (their times overlap, and they share the communicator or a process); else None."""
    if incident.first_us is None or tracked.window is None:
        return None
    start = incident.first_us - SLACK_US
    end = (incident.last_us or incident.first_us) + SLACK_US
    first, last = tracked.window
    if last < start or first > end:
        return None
    same = _communicator(tracked, incident)
    if same is False:
        return None  # another communicator: another job, even under the same pids
    shared = len(_processes_of(incident) & tracked.processes)
    return shared if shared or same else None


def _loosely_shared(tracked: Tracked, incident: Incident) -> bool:
    """Whether an early verdict may be of the fault of `incident`: not of another communicator,
    and sharing a process or the communicator with it, or naming no process and starting within
    the slack of it."""
    same = _communicator(tracked, incident)
    if same is False:
        return False
    if same or _processes_of(incident) & tracked.processes:
        return True
    if tracked.processes or tracked.window is None or incident.first_us is None:
        return False
    return abs(tracked.window[0] - incident.first_us) <= SLACK_US


def _communicator(tracked: Tracked, incident: Incident) -> bool | None:
    """Whether a written incident and a verdict are of one communicator (None: one of them
    does not know its own). Some HCCL lines give only the end of a communicator's name, the
    part after the root's address (`64000_0_1757081746616696` of
    `172.16.1.148%eth0_64000_0_1757081746616696`), and an early verdict may know only that."""
    one, other = tracked.communicator, incident.communicator
    if one is None or other is None:
        return None
    return one == other or one.endswith(f"_{other}") or other.endswith(f"_{one}")


def _processes_of(incident: Incident) -> frozenset[tuple[str, int]]:
    places = [*incident.root_cause, *incident.victims]
    return frozenset((p.host or "", p.pid) for p in places if p.pid is not None)
