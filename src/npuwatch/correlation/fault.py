"""One fault as the rules see it: its events, the places they name, the waits-for graph.

A Fault resolves every peer a failure line names to a process (through the Directory) or, when
no process of the collection is that peer, to a Place without logs, which it remembers as
unheard. The helpers below are shared by the rules of decide.py and timeouts.py.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from npuwatch.correlation.graph import Node, WaitGraph, reverse_chain
from npuwatch.correlation.incident import Place
from npuwatch.correlation.prepare import TIMEOUT_CLASSES, Ev, Prepared
from npuwatch.parsers.hccl.model import ProcessKey


@dataclass
class Finding:
    """What a rule concluded: the kind of fault (kinds.py), the roots, the waiting chain, and
    why."""

    kind: str
    roots: list[Node]
    chain: list[Node]
    reason: str
    confidence_change: float = 0.0


class Fault:
    """The events of one fault and the places they name."""

    def __init__(self, prepared: Prepared, evs: list[Ev]) -> None:
        self.prepared = prepared
        self.evs = evs
        self.directory = prepared.directory
        self.unheard: dict[Place, None] = {}
        self._members: dict[str | None, tuple[dict[int, ProcessKey], list[int]]] = {}
        self.notes: list[str] = []
        timeouts = [ev for ev in evs if ev.cls in TIMEOUT_CLASSES]
        self.first_timeout = timeouts[0] if timeouts else None
        self.communicator = (self.first_timeout or evs[0]).communicator

    # -- places -------------------------------------------------------------------------------

    def place(self, node: Node, communicator: str | None = None) -> Place:
        if isinstance(node, Place):
            return node
        communicator = communicator or self.communicator
        view = self.prepared.views.get(node)
        rank = self.directory.rank_of(node, communicator)
        if rank is None:
            memberships = self.directory.memberships.get(node, {})
            if len(memberships) == 1:
                communicator, membership = next(iter(memberships.items()))
                rank = membership.rank
        return Place(
            host=node.host or None,
            device=view.device if view else None,
            logic_device=view.get_int("logic_device") if view else None,
            rank=rank,
            communicator=communicator,
            pid=node.pid,
            address=view.get_str("device_ip") if view else None,
            has_logs=True,
        )

    def target(self, ev: Ev) -> Node | None:
        """Whom the event says its process waited for (None: nobody named, or itself)."""
        event = ev.event
        key = ev.process
        directory = self.directory
        if event.remote_local:
            return None
        if event.kind == "p2p" and event.remote_device is not None:
            found = directory.by_host_device.get((key.host, event.remote_device))
            return found or self._unheard(
                Place(host=key.host or None, device=event.remote_device, has_logs=False)
            )
        if event.remote_ip is not None:
            found = (
                directory.by_device_ip.get(event.remote_ip)
                or directory.by_host_vnic.get((key.host, event.remote_ip))
                or directory.by_link_ip.get(event.remote_ip)
            )
            if found is not None:
                return found
        if event.remote_server is not None and event.remote_device is not None:
            found = self.known_at(event.remote_server, event.remote_device)
            if found is not None:
                return found
        if event.remote_rank is not None:
            count = self.rank_count(ev.communicator)
            if count is not None and event.remote_rank >= count:
                self.notes.append(
                    f"{key.describe()} names rank {event.remote_rank} of a "
                    f"{count}-rank communicator"
                )
                return None
            found = directory.by_rank(ev.communicator, event.remote_rank, ev.time_us)
            if found is not None:
                return found
            return self._unheard(
                Place(
                    rank=event.remote_rank,
                    communicator=ev.communicator,
                    address=event.remote_ip,
                    has_logs=False,
                )
            )
        if event.remote_ip is not None:
            host = directory.host_of_ip.get(event.remote_ip)
            return self._unheard(Place(host=host, address=event.remote_ip, has_logs=False))
        if event.remote_server is not None:
            return self.at_server(event.remote_server, event.remote_device)
        return None

    def known_at(self, server: str, device: int) -> ProcessKey | None:
        """The process with logs on a server id (or host address) and physical device."""
        directory = self.directory
        found = directory.by_server_device.get((server, device))
        if found is None:
            host = directory.host_of_ip.get(server)
            if host is not None:
                found = directory.by_host_device.get((host, device))
        return found

    def at_server(self, server: str, device: int | None) -> Node:
        """A server id and device as a node: its process, else a place without logs."""
        found = self.known_at(server, device) if device is not None else None
        if found is not None:
            return found
        host = self.directory.host_of_ip.get(server)
        return self._unheard(Place(host=host, device=device, address=server, has_logs=False))

    def _unheard(self, place: Place) -> Place:
        self.unheard.setdefault(place, None)
        return place

    def rank_count(self, communicator: str | None) -> int | None:
        found = self.directory.communicators.get(communicator or "")
        return None if found is None else found.rank_count

    def graph(self, evs: list[Ev]) -> WaitGraph:
        graph = WaitGraph()
        for ev in evs:
            if ev.event.remote_local:
                if ev.process not in graph.waits_on_itself:
                    graph.waits_on_itself.append(ev.process)
                continue
            target = self.target(ev)
            if target is not None and target != ev.process:
                graph.add(ev.process, target)
        return graph

    def members(self, communicator: str | None) -> tuple[dict[int, ProcessKey], list[int]]:
        """The ranks of the communicator with their processes, and the ranks without logs
        (worked out once per communicator: the rules ask for them for every event)."""
        known = self._members.get(communicator)
        if known is None:
            known = self._members[communicator] = self._find_members(communicator)
        return known

    def _find_members(self, communicator: str | None) -> tuple[dict[int, ProcessKey], list[int]]:
        found = self.directory.communicators.get(communicator or "")
        if found is None:
            return {}, []
        time_us = self.first_timeout.time_us if self.first_timeout else None
        with_logs = {
            rank: key
            for rank in found.ranks
            if (key := self.directory.by_rank(communicator, rank, time_us)) is not None
        }
        count = found.rank_count if found.rank_count is not None else len(found.ranks)
        without = [rank for rank in range(count) if rank not in with_logs]
        return with_logs, without

    def missing_place(self, communicator: str | None, rank: int) -> Place:
        return self._unheard(Place(rank=rank, communicator=communicator, has_logs=False))


def op_of(tag: str) -> str:
    """`AllGather` of `AllGather_<communicator>`: the communicator is named elsewhere."""
    return tag.partition("_")[0] or tag


def reporters(bucket: list[Ev]) -> dict[ProcessKey, int | None]:
    """Processes in order of their first report, with its time."""
    found: dict[ProcessKey, int | None] = {}
    for ev in bucket:
        found.setdefault(ev.process, ev.time_us)
    return found


def spread_s(reporters: dict[ProcessKey, int | None]) -> float:
    times = [time for time in reporters.values() if time is not None]
    return (max(times) - min(times)) / 1e6 if times else 0.0


def involved(fault: Fault) -> set[ProcessKey]:
    involved = {ev.process for ev in fault.evs}
    for communicator in {ev.communicator for ev in fault.evs}:
        with_logs, _ = fault.members(communicator)
        involved.update(with_logs.values())
    return involved


def waits_on(fault: Fault, graph: WaitGraph | None = None) -> Counter[Node]:
    if graph is None:
        graph = fault.graph([ev for ev in fault.evs if ev.cls in TIMEOUT_CLASSES])
    counts: Counter[Node] = Counter()
    for targets in graph.edges.values():
        counts.update(targets[:1])
    return counts


def chain_to(fault: Fault, root: Node, graph: WaitGraph | None = None) -> list[Node]:
    if graph is None:
        graph = fault.graph([ev for ev in fault.evs if ev.cls in TIMEOUT_CLASSES])
    chain = reverse_chain(graph, root)
    if len(chain) > 1:
        return chain
    first = fault.first_timeout
    if first is not None and first.process != root:
        return [first.process, root]
    return []
