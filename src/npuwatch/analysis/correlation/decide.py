"""One fault's verdict: FaultDiag's precedence (CORRELATION.md §1.6), done where it goes wrong.

CQE > HCCL's own cluster-exception verdict > the transport-init chain > "the first error was
not a timeout" > the timeout class of the earliest report > the AI-CPU chain > errors only.
Unlike FaultDiag: the timeouts are the ones the processes logged; "every rank reported" counts
against the communicator's rank count; a peer without logs is named as such (not replaced by
its waiter); each fault of a job is decided on its own events; times are on corrected clocks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from npuwatch.analysis.correlation.graph import Node, WaitGraph, reverse_chain, walk
from npuwatch.analysis.correlation.incident import Incident, Place
from npuwatch.analysis.correlation.prepare import (
    LINK_SETUP_EXTRA_S,
    TIMEOUT_CLASSES,
    Ev,
    Prepared,
)
from npuwatch.parsers.hccl.model import Evidence, ProcessKey

_EVIDENCE_LINES = 8
_WAITING_CLASSES = TIMEOUT_CLASSES | {"aicpu_notify", "transport_init"}
"""Events that say "I waited": who reported one is a victim unless it is the root."""
_BASE_CONFIDENCE = {
    101: 0.3, 107: 0.6, 108: 0.8, 109: 0.7, 110: 0.6, 111: 0.3, 112: 0.85, 113: 0.85,
    116: 0.9, 117: 0.6, 118: 0.7, 119: 0.75, 120: 0.7, 121: 0.75, 122: 0.7, 123: 0.7,
    124: 0.5, 125: 0.8, 126: 0.85, 132: 0.8, 133: 0.3,
}  # fmt: skip


@dataclass
class _Finding:
    code: int
    roots: list[Node]
    chain: list[Node]
    reason: str
    confidence_change: float = 0.0


class _Fault:
    """The events of one fault and the places they name."""

    def __init__(self, prepared: Prepared, evs: list[Ev]) -> None:
        self.prepared = prepared
        self.evs = evs
        self.directory = prepared.directory
        self.unheard: dict[Place, None] = {}
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
            found = directory.by_device_ip.get(event.remote_ip) or directory.by_host_vnic.get(
                (key.host, event.remote_ip)
            )
            if found is not None:
                return found
        if event.remote_server is not None and event.remote_device is not None:
            found = directory.by_server_device.get((event.remote_server, event.remote_device))
            if found is None:
                host = directory.host_of_ip.get(event.remote_server)
                if host is not None:
                    found = directory.by_host_device.get((host, event.remote_device))
            if found is not None:
                return found
        if event.remote_rank is not None:
            count = self._rank_count(ev.communicator)
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
            host = directory.host_of_ip.get(event.remote_server)
            return self._unheard(
                Place(
                    host=host,
                    device=event.remote_device,
                    address=event.remote_server,
                    has_logs=False,
                )
            )
        return None

    def _unheard(self, place: Place) -> Place:
        self.unheard.setdefault(place, None)
        return place

    def _rank_count(self, communicator: str | None) -> int | None:
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
        """The ranks of the communicator with their processes, and the ranks without logs."""
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


def decide(prepared: Prepared, evs: list[Ev]) -> Incident:
    fault = _Fault(prepared, evs)
    finding = (
        _cqe(fault)
        or _cluster_exception(fault)
        or _transport_chain(fault)
        or _first_error_not_timeout(fault)
        or _timeouts(fault)
        or _aicpu(fault)
        or _errors_only(fault)
    )
    return _incident(fault, finding)


# -- the rules, in precedence order -------------------------------------------------------------


def _cqe(fault: _Fault) -> _Finding | None:
    cqes = [ev for ev in fault.evs if ev.cls == "cqe"]
    if not cqes:
        return None
    links: dict[ProcessKey, list[Node]] = {}
    for ev in cqes:
        target = fault.target(ev)
        targets = links.setdefault(ev.process, [])
        if target is not None and target not in targets:
            targets.append(target)
    for source, named in links.items():
        known: list[Node] = [t for t in named if isinstance(t, ProcessKey)]
        if known:  # an address that did not resolve is most likely the same peer's NIC
            links[source] = known
            for target in named:
                if isinstance(target, Place):
                    fault.unheard.pop(target, None)
    targets = list(dict.fromkeys(target for found in links.values() for target in found))
    sources = list(links)
    waits = _waits_on(fault)
    if len(targets) == 1 and len(sources) > 1:
        roots: list[Node] = [targets[0]]
        reason = f"{len(sources)} devices lost RDMA retransmissions towards it"
    elif len(targets) == 1 and len(sources) == 1:
        source, target = sources[0], targets[0]
        if isinstance(target, ProcessKey) and source in links.get(target, []):
            roots = [source, target]
        elif waits.get(source, 0) > waits.get(target, 0):
            roots = [source]
        elif waits.get(target, 0) > waits.get(source, 0):
            roots = [target]
        else:
            roots = [source, target]
        label = fault.place(target).label()
        reason = f"RDMA retransmissions exceeded on the link to {label}"
    else:
        roots = [*sources, *(t for t in targets if t not in sources)]
        reason = "RDMA retransmissions exceeded on several links"
    chain = _chain_to(fault, roots[0])
    return _Finding(116, roots, chain, reason)


def _cluster_exception(fault: _Fault) -> _Finding | None:
    named: Counter[Node] = Counter()
    cause = ""
    for ev in fault.evs:
        if ev.cls != "cluster_exception":
            continue
        target = fault.target(ev)
        if isinstance(target, ProcessKey):
            named[target] += 1
            cause = cause or (ev.event.exception_type or "")
    if not named:
        return None
    root = named.most_common(1)[0][0]
    reason = f"HCCL's heartbeat reported {cause or 'an exception'} on it"
    return _Finding(126, [root], _chain_to(fault, root), reason)


def _transport_chain(fault: _Fault) -> _Finding | None:
    evs = [ev for ev in fault.evs if ev.cls == "transport_init"]
    if not evs:
        return None
    graph = fault.graph(evs)
    if not graph.edges:
        return _Finding(133, [], [], "transport setup failed and no peer could be resolved")
    start = next((ev.process for ev in evs if ev.process in graph.edges), evs[0].process)
    found = walk(graph, start)
    if len(found.chain) < 2:
        return _Finding(133, [], [], "transport setup failed and no chain resolves")
    reason = "the transport setup of the ranks waited, one on the next, for it"
    if found.cycle:
        reason = "transport setups wait on each other in a cycle"
    return _Finding(132, found.roots, found.chain, reason)


def _first_error_not_timeout(fault: _Fault) -> _Finding | None:
    first_timeout = fault.first_timeout
    if first_timeout is None or first_timeout.time_us is None:
        return None
    members = _involved(fault)
    timed_out = {ev.process for ev in fault.evs if ev.cls in TIMEOUT_CLASSES}
    window = int(fault.prepared.timeout_s(first_timeout.process, first_timeout.cls) * 2e6)
    errors = sorted(
        (
            ev
            for key, ev in fault.prepared.errors.items()
            if key in members
            and ev.time_us is not None
            and first_timeout.time_us - window <= ev.time_us <= first_timeout.time_us
        ),
        key=lambda ev: (ev.time_us or 0, ev.process),
    )
    if not errors or errors[0].process in timed_out:
        return None
    roots: list[Node] = [ev.process for ev in errors if ev.process not in timed_out]
    module = errors[0].event.module or "another module"
    reason = f"its first error ({module}) came before every timeout"
    return _Finding(113, roots, _chain_to(fault, roots[0]), reason)


def _timeouts(fault: _Fault) -> _Finding | None:
    first = fault.first_timeout
    if first is None:
        return None
    bucket = [
        ev for ev in fault.evs if ev.cls == first.cls and ev.communicator == first.communicator
    ]
    if first.cls == "socket":
        return _socket(fault, bucket)
    if first.cls == "notify":
        return _notify(fault, bucket)
    return _rootinfo(fault, bucket)


def _socket(fault: _Fault, bucket: list[Ev]) -> _Finding:
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reporters = _reporters(bucket)
    tls = {key: fault.prepared.views[key].values.get("tls") for key in with_logs.values()}
    states = Counter(value for value in tls.values() if isinstance(value, bool))
    if len(states) == 2:
        minority = min(states, key=lambda state: (states[state], state))
        roots: list[Node] = [key for key, value in tls.items() if value == minority]
        return _Finding(120, roots, [], "its TLS switch differs from the other devices'")
    spread = _spread_s(reporters)
    limit = fault.prepared.timeout_s(bucket[0].process, "socket")
    if not without and len(reporters) == len(with_logs) > 1 and spread > limit + LINK_SETUP_EXTRA_S:
        last = list(reporters)[-1]
        return _Finding(
            107,
            [last],
            [],
            f"it reported {spread:,.0f} s after the first, more than the "
            f"{limit:,.0f} s HCCL_CONNECT_TIMEOUT: it reached link setup late",
        )
    graph = fault.graph(bucket)
    found = walk(graph, bucket[0].process)
    if found.cycle:
        return _Finding(108, found.roots, found.chain, "the ranks wait for each other (a cycle)")
    reason = "the waiting chain of link setup ends at it"
    change = 0.0
    end = found.roots[0]
    if isinstance(end, Place):
        reason += "; it left no logs in this collection"
        change = -0.2
    elif end in reporters:
        reason += ", and it names no peer"
        change = -0.2
    return _Finding(108, found.roots, found.chain, reason, change)


def _notify(fault: _Fault, bucket: list[Ev]) -> _Finding:
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reporters = _reporters(bucket)
    silent: list[Node] = [key for key in with_logs.values() if key not in reporters]
    silent += [fault.missing_place(communicator, rank) for rank in without]
    graph = fault.graph(bucket)
    if silent and (with_logs or without):
        named = _waits_on(fault, graph)
        pointed = [node for node in silent if named.get(node)]
        roots = pointed or silent
        reason = "ranks timed out waiting for it, and it reported no timeout"
        if all(isinstance(node, Place) for node in roots):
            reason = "ranks timed out waiting for it; it left no logs in this collection"
        return _Finding(112, roots, _chain_to(fault, roots[0], graph), reason)
    spread = _spread_s(reporters)
    limit = fault.prepared.timeout_s(bucket[0].process, "notify")
    if len(reporters) > 1 and spread > limit:
        last = list(reporters)[-1]
        return _Finding(
            110,
            [last],
            [],
            f"it reported {spread:,.0f} s after the first, more than the "
            f"{limit:,.0f} s HCCL_EXEC_TIMEOUT its processes logged: it arrived late",
        )
    indexes = {ev.process: ev.event.op_index for ev in bucket if ev.event.op_index is not None}
    if len(set(indexes.values())) > 1:
        smallest = min(indexes.values())
        roots = [key for key, index in indexes.items() if index == smallest]
        return _Finding(122, roots, [], f"it stopped at op index {smallest}, behind the others")
    tags: dict[str, list[ProcessKey]] = {}
    for ev in bucket:
        if ev.event.tag:
            members = tags.setdefault(ev.event.tag, [])
            if ev.process not in members:
                members.append(ev.process)
    if len(tags) > 1:
        rarest = min(tags, key=lambda tag: (len(tags[tag]), tag))
        usual = max(tags, key=lambda tag: (len(tags[tag]), tag))
        return _Finding(
            123,
            list(tags[rarest]),
            [],
            f"it timed out in {_op_of(rarest)} while {len(tags[usual])} others were in "
            f"{_op_of(usual)}: the call order diverged",
        )
    return _notify_walk(fault, graph, bucket)


def _notify_walk(fault: _Fault, graph: WaitGraph, bucket: list[Ev]) -> _Finding:
    degree = graph.in_degree()
    own = [key for key in graph.waits_on_itself if degree.get(key)]
    if own:
        chain = reverse_chain(graph, own[0])
        return _Finding(125, list(own), chain, "it waited on its own stream; the others on it")
    crowded = sorted((node for node in degree if degree[node] > 1), key=lambda n: -degree[n])
    if crowded:
        found = walk(graph, crowded[0])
    elif graph.edges and all(len(targets) == 1 for targets in graph.edges.values()):
        found = walk(graph, bucket[0].process)
    else:
        return _Finding(111, [], [], "the ranks' waits do not point at one rank")
    if found.cycle:
        cycle = ", ".join(fault.place(node).label() for node in found.roots)
        return _Finding(
            124,
            [],
            found.chain,
            f"{cycle} wait on each other in a cycle (a deadlock in the "
            "operator order; their Entry- sequences diverge)",
        )
    end = found.roots[0]
    if isinstance(end, Place):
        return _Finding(112, [end], found.chain, "the waits end at a rank without logs")
    return _Finding(111, [end], found.chain, "the waits end at it, but it names no peer", -0.1)


def _rootinfo(fault: _Fault, bucket: list[Ev]) -> _Finding:
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reporters = _reporters(bucket)
    found = fault.directory.communicators.get(communicator or "")
    root = found.root if found is not None else None
    connected = next(
        (ev.event.connected_ranks for ev in bucket if ev.event.connected_ranks is not None), None
    )
    if connected is not None:
        never = [rank for rank in without if rank not in connected]
        if never:
            roots: list[Node] = [fault.missing_place(communicator, rank) for rank in never]
            return _Finding(121, roots, [], "it never connected to the root and left no logs")
    if root is not None and root not in reporters:
        return _Finding(
            118, [root], _chain_to(fault, root), "it holds the root rank, and it never answered"
        )
    silent: list[Node] = [key for key in with_logs.values() if key not in reporters]
    if silent:
        return _Finding(119, silent, [], "it never reported, while the others timed out joining")
    spread = _spread_s(reporters)
    limit = fault.prepared.timeout_s(bucket[0].process, "rootinfo")
    if len(reporters) > 1 and spread > limit + LINK_SETUP_EXTRA_S:
        return _Finding(117, [list(reporters)[-1]], [], f"it started {spread:,.0f} s late")
    if root is not None:
        return _Finding(118, [root], [], "it holds the root rank the others could not reach")
    return _Finding(118, [], [], "the root rank's logs are not in this collection", -0.3)


def _aicpu(fault: _Fault) -> _Finding | None:
    evs = [ev for ev in fault.evs if ev.cls == "aicpu_notify"]
    if not evs:
        return None
    graph = fault.graph(evs)
    if not graph.edges:
        return None
    found = walk(graph, evs[0].process)
    reason = "the AI-CPU notify waits end at it"
    if found.cycle:
        reason = "the AI-CPU notify waits form a cycle"
    return _Finding(109, found.roots, found.chain, reason)


def _errors_only(fault: _Fault) -> _Finding:
    roots: list[Node] = list(dict.fromkeys(ev.process for ev in fault.evs))
    return _Finding(101, roots, [], "errors without a timeout that names a peer")


# -- shared -------------------------------------------------------------------------------------


def _op_of(tag: str) -> str:
    """`AllGather` of `AllGather_<communicator>`: the communicator is named elsewhere."""
    return tag.partition("_")[0] or tag


def _reporters(bucket: list[Ev]) -> dict[ProcessKey, int | None]:
    """Processes in order of their first report, with its time."""
    found: dict[ProcessKey, int | None] = {}
    for ev in bucket:
        found.setdefault(ev.process, ev.time_us)
    return found


def _spread_s(reporters: dict[ProcessKey, int | None]) -> float:
    times = [time for time in reporters.values() if time is not None]
    return (max(times) - min(times)) / 1e6 if times else 0.0


def _involved(fault: _Fault) -> set[ProcessKey]:
    involved = {ev.process for ev in fault.evs}
    for ev in fault.evs:
        with_logs, _ = fault.members(ev.communicator)
        involved.update(with_logs.values())
    return involved


def _waits_on(fault: _Fault, graph: WaitGraph | None = None) -> Counter[Node]:
    if graph is None:
        graph = fault.graph([ev for ev in fault.evs if ev.cls in TIMEOUT_CLASSES])
    counts: Counter[Node] = Counter()
    for targets in graph.edges.values():
        counts.update(targets[:1])
    return counts


def _chain_to(fault: _Fault, root: Node, graph: WaitGraph | None = None) -> list[Node]:
    if graph is None:
        graph = fault.graph([ev for ev in fault.evs if ev.cls in TIMEOUT_CLASSES])
    chain = reverse_chain(graph, root)
    if len(chain) > 1:
        return chain
    first = fault.first_timeout
    if first is not None and first.process != root:
        return [first.process, root]
    return []


def _incident(fault: _Fault, finding: _Finding) -> Incident:
    roots = [fault.place(node) for node in finding.roots]
    chain = [fault.place(node) for node in finding.chain]
    root_keys = {node for node in finding.roots if isinstance(node, ProcessKey)}
    victims = [
        fault.place(key)
        for key in _reporters([ev for ev in fault.evs if ev.cls in _WAITING_CLASSES])
        if key not in root_keys
    ]
    unheard = [place for place in fault.unheard if place not in roots or not place.has_logs]
    notes = [*fault.prepared.notes, *dict.fromkeys(fault.notes)]
    if fault.communicator is not None and fault.communicator not in fault.directory.communicators:
        notes.append(
            f"no process in these logs joined {fault.communicator}: its ranks and devices are "
            "not known"
        )
    notes += fault.prepared.directory.problems[:10]
    for ev in fault.evs:
        notes += ev.event.problems
    members, _ = fault.members(fault.communicator)
    for key in sorted({ev.process for ev in fault.evs} | set(members.values())):
        notes += fault.prepared.views[key].problems
    notes = list(dict.fromkeys(notes))
    confidence = _BASE_CONFIDENCE[finding.code] + finding.confidence_change
    confidence *= 0.9 ** len([n for n in notes if "clock" not in n])
    first_time = min((ev.time_us for ev in fault.evs if ev.time_us is not None), default=None)
    for key in root_keys:  # the root's own first error can come before any collective line
        error = fault.prepared.errors.get(key)
        if error is not None and error.time_us is not None and first_time is not None:
            window = int(fault.prepared.timeout_s(key, "notify") * 1e6)
            if first_time - window <= error.time_us < first_time:
                first_time = error.time_us
    recovered = any(
        fault.prepared.views.get(ProcessKey(key.host, key.pid, key.incarnation + 1)) is not None
        and fault.prepared.views[ProcessKey(key.host, key.pid, key.incarnation + 1)].resumed
        for key in root_keys | {ev.process for ev in fault.evs}
    )
    return Incident(
        faultdiag_code=finding.code,
        summary=_summary(finding, roots, victims),
        communicator=fault.communicator,
        root_cause=roots,
        waiting_chain=chain,
        victims=victims,
        unheard=unheard,
        evidence=_evidence(fault, finding),
        confidence=max(0.05, min(0.99, confidence)),
        first_us=first_time,
        notes=notes,
        recovered=recovered,
    )


def _summary(finding: _Finding, roots: list[Place], victims: list[Place]) -> str:
    waiting = f"; {len(victims)} rank{'s' if len(victims) != 1 else ''} were only waiting"
    if not victims:
        waiting = ""
    if not roots:
        return f"No single root cause: {finding.reason}{waiting}"
    names = ", ".join(place.label() for place in roots[:4])
    if len(roots) > 4:
        names += f" and {len(roots) - 4} more"
    reason = finding.reason
    if len(roots) == 1:
        return f"{names} failed first: {reason}{waiting}"
    for one, many in (("it ", "they "), ("its ", "their "), ("it, ", "them, ")):
        reason = reason.replace(one, many)
    return f"{names} failed first together: {reason}{waiting}"


def _evidence(fault: _Fault, finding: _Finding) -> list[Evidence]:
    lines: list[Evidence] = []
    roots = {node for node in finding.roots if isinstance(node, ProcessKey)}
    decisive = [ev for ev in fault.evs if ev.process in roots]
    for key in sorted(roots):
        error = fault.prepared.errors.get(key)
        if error is not None:
            lines.extend(error.event.evidence[:2])
    for ev in decisive[:3]:
        lines.extend(ev.event.evidence[:3])
    others = [ev for ev in fault.evs if ev.process not in roots]
    for ev in others[:2]:
        lines.extend(ev.event.evidence[:2])
    unique = list(dict.fromkeys(lines))
    return sorted(unique[:_EVIDENCE_LINES], key=lambda e: (e.time_us is None, e.time_us or 0))
