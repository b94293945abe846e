"""One fault's verdict: FaultDiag's precedence (CORRELATION.md §1.6), done where it goes wrong.

CQE > HCCL's own cluster-exception verdict > the transport-init chain > "the first error was
not a timeout" > the timeout class of the earliest report > the AI-CPU chain > errors only.
Unlike FaultDiag: the timeouts are the ones the processes logged; "every rank reported" counts
against the communicator's rank count; a peer without logs is named as such (not replaced by
its waiter); each fault of a job is decided on its own events; times are on corrected clocks.
"""

from __future__ import annotations

import re
from collections import Counter

from npuwatch.correlation.fault import (
    Fault,
    Finding,
    chain_to,
    involved,
    reporters,
    waits_on,
)
from npuwatch.correlation.graph import Node, walk
from npuwatch.correlation.incident import Incident, Place
from npuwatch.correlation.kinds import KINDS
from npuwatch.correlation.prepare import TIMEOUT_CLASSES, Ev, Prepared, window_us
from npuwatch.correlation.probes import probed
from npuwatch.correlation.timeouts import timeout_finding
from npuwatch.parsers.hccl.model import Evidence, ProcessKey

_EVIDENCE_LINES = 8
_WAITING_CLASSES = TIMEOUT_CLASSES | {"aicpu_notify", "transport_init", "weak"}
"""Events that say "I waited": who reported one is a victim unless it is the root."""


def decide(prepared: Prepared, evs: list[Ev]) -> Incident:
    probes = [ev for ev in evs if ev.cls == "probe"]
    fault = Fault(prepared, [ev for ev in evs if ev.cls != "probe"] if probes else evs)
    finding = (
        _stated(fault)
        or _cqe(fault)
        or _cluster_exception(fault)
        or _transport_chain(fault)
        or _first_error_not_timeout(fault)
        or _setting_mismatch(fault)
        or timeout_finding(fault)
        or _aicpu(fault)
        or _weak_only(fault)
        or _errors_only(fault)
    )
    if probes:
        finding = probed(fault, finding, probes)
    return _incident(fault, finding)


# -- the rules, in precedence order ---------------------------------------------


def _stated(fault: Fault) -> Finding | None:
    """HCCL said in one line what is wrong with a process at init (formats/hccl-init-and-link.md
    §2.0: a configuration fault seen at init comes before every timeout it causes). The ranks
    the line names are the root cause, else the process that said it."""
    stated = [ev for ev in fault.evs if ev.cls == "init_failure"]
    if not stated:
        return None
    first = stated[0]
    kind = first.event.stated or "errors_without_timeout"
    same = [ev for ev in stated if ev.event.stated == kind]
    roots: list[Node] = []
    for ev in same:
        named = fault.target(ev) if ev.event.names_peer else None
        node: Node = named if named is not None else ev.process
        if node not in roots:
            roots.append(node)
    detail = first.event.detail
    what = KINDS[kind].meaning
    reason = f"HCCL said so in one line: {what}" + (f" ({detail})" if detail else "")
    return Finding(kind, roots, [], reason)


def _cqe(fault: Fault) -> Finding | None:
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
    waits = waits_on(fault)
    if len(targets) == 1 and len(sources) > 1:
        roots: list[Node] = [targets[0]]
        reason = f"{len(sources)} devices lost RDMA retransmissions towards it"
    elif len(targets) == 1 and len(sources) == 1:
        source, target = sources[0], targets[0]
        if isinstance(target, Place) and not any(ev.event.detail for ev in cqes):
            return _cqe_one_end(fault, source, target)
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
    chain = chain_to(fault, roots[0])
    return Finding("rdma_retransmission", roots, chain, reason)


def _cqe_one_end(fault: Fault, source: ProcessKey, target: Place) -> Finding:
    """An error CQE that states no status (EI0013's message), seen from one end of a link
    whose other end left no logs: neither retransmissions running out nor the peer's exit is
    shown, so the link is the fault, both ends named."""
    label = fault.place(target).label()
    reason = (
        f"an error CQE on the link to {label}, seen from this end only: a broken network and "
        "a peer that exited first cannot be told apart without the peer's logs"
    )
    return Finding("link_network", [source, target], chain_to(fault, source), reason)


def _cluster_exception(fault: Fault) -> Finding | None:
    named: Counter[Node] = Counter()
    elsewhere: Counter[Node] = Counter()
    cause = ""
    for ev in fault.evs:
        if ev.cls != "cluster_exception":
            continue
        target = fault.target(ev)
        if target is not None:
            # a device this collection has no logs of is named too, after any that it has
            (named if isinstance(target, ProcessKey) else elsewhere)[target] += 1
            # the verdict's ExceptionType reads better than a status change (`LOST`)
            if not cause or (ev.event.exception_type or "").endswith("Occurred"):
                cause = ev.event.exception_type or cause
    named = named or elsewhere
    if not named:
        return None
    root = named.most_common(1)[0][0]
    reason = f"HCCL's heartbeat reported {cause or 'an exception'} on it"
    return Finding("hccl_cluster_exception", [root], chain_to(fault, root), reason)


def _transport_chain(fault: Fault) -> Finding | None:
    evs = [ev for ev in fault.evs if ev.cls == "transport_init"]
    if not evs or any(ev.cls == "socket" for ev in fault.evs):
        # `Transport init error` follows the LINK_ERROR_INFO table of the same failure: the
        # table's rows say more (roles, both ends), so link setup decides
        return None
    graph = fault.graph(evs)
    if not graph.edges:
        return Finding(
            "transport_init_unlocated",
            [],
            [],
            "transport setup failed and no peer could be resolved",
        )
    start = next((ev.process for ev in evs if ev.process in graph.edges), evs[0].process)
    found = walk(graph, start)
    if len(found.chain) < 2:
        return Finding(
            "transport_init_unlocated", [], [], "transport setup failed and no chain resolves"
        )
    reason = "the transport setup of the ranks waited, one on the next, for it"
    if found.cycle:
        reason = "transport setups wait on each other in a cycle"
    return Finding("transport_init_chain", found.roots, found.chain, reason)


def _first_error_not_timeout(fault: Fault) -> Finding | None:
    first_timeout = fault.first_timeout
    if first_timeout is None or first_timeout.time_us is None:
        return None
    members = involved(fault)
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
    return Finding("first_error_not_timeout", roots, chain_to(fault, roots[0]), reason)


def _setting_mismatch(fault: Fault) -> Finding | None:
    """Ranks that timed out together under settings that differ (formats/hccl-init-and-link.md
    §2.4): the processes in the minority for a setting are the root cause; an even split names
    both groups. Only timeouts are explained so: an error before them is its own cause."""
    if fault.first_timeout is None:
        return None
    views = fault.prepared.views
    known = {key: views[key].settings() for key in sorted(involved(fault)) if key in views}
    variables = sorted({variable for settings in known.values() for variable in settings})
    for variable in variables:
        groups: dict[str, list[ProcessKey]] = {}
        for key, settings in known.items():
            if variable in settings:
                groups.setdefault(settings[variable], []).append(key)
        if len(groups) < 2 or sum(len(keys) for keys in groups.values()) < 2:
            continue
        ordered = sorted(groups.items(), key=lambda item: (len(item[1]), item[0]))
        smallest = len(ordered[0][1])
        minority = [value for value, keys in ordered if len(keys) == smallest]
        where = "it is in the minority"
        if len(minority) == len(ordered):  # an even split: every group
            minority = [value for value, _ in ordered]
            where = "an even split, so both groups"
        roots: list[Node] = [key for value in minority for key in groups[value]]
        values = ", ".join(f"{value} on {len(groups[value])}" for value, _ in ordered)
        return Finding(
            "setting_mismatch",
            roots,
            [],
            f"{variable} differs between the ranks ({values}): {where}",
        )
    return None


def _aicpu(fault: Fault) -> Finding | None:
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
    return Finding("aicpu_notify_wait", found.roots, found.chain, reason)


def _weak_only(fault: Fault) -> Finding | None:
    """Only socket receive timeouts, which name no peer: they say someone did not send, not
    who (CORRELATION.md §5.6), so they are never a verdict naming their reporters."""
    if not fault.evs or any(ev.cls != "weak" for ev in fault.evs):
        return None
    return Finding(
        "weak_timeout_unlocated",
        [],
        [],
        "socket receive timeouts that name no peer: the fault cannot be located from them",
    )


def _errors_only(fault: Fault) -> Finding:
    roots: list[Node] = list(dict.fromkeys(ev.process for ev in fault.evs))
    return Finding(
        "errors_without_timeout", roots, [], "errors without a timeout that names a peer"
    )


# -- the incident ---------------------------------------------------------------------------


def _incident(fault: Fault, finding: Finding) -> Incident:
    roots = [fault.place(node) for node in finding.roots]
    chain = [fault.place(node) for node in finding.chain]
    root_keys = {node for node in finding.roots if isinstance(node, ProcessKey)}
    victims = [
        fault.place(key)
        for key in reporters([ev for ev in fault.evs if ev.cls in _WAITING_CLASSES])
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
    confidence = KINDS[finding.kind].confidence + finding.confidence_change
    confidence *= 0.9 ** len([n for n in notes if "clock" not in n])
    first_time = min((ev.time_us for ev in fault.evs if ev.time_us is not None), default=None)
    for key in root_keys:  # the root's own first error can come before any collective line
        error = fault.prepared.errors.get(key)
        if error is not None and error.time_us is not None and first_time is not None:
            window = int(fault.prepared.timeout_s(key, "notify") * 1e6)
            if first_time - window <= error.time_us < first_time:
                first_time = error.time_us
    recovered = not fault.prepared.recovered.isdisjoint(
        root_keys | {ev.process for ev in fault.evs}
    )
    timed = [ev.time_us for ev in fault.evs if ev.time_us is not None]
    settling = fault.first_timeout or fault.evs[0]
    return Incident(
        kind=finding.kind,
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
        last_us=max(timed, default=None),
        settle_us=None
        if first_time is None
        else first_time + window_us(fault.prepared, fault.evs, settling.cls),
        ranks_expected=fault.rank_count(fault.communicator),
        ranks_reported=len({ev.process for ev in fault.evs} | root_keys),
    )


def _summary(finding: Finding, roots: list[Place], victims: list[Place]) -> str:
    waiting = f"; {len(victims)} ranks were only waiting"
    if len(victims) == 1:
        waiting = "; 1 rank was only waiting"
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
    plural = ((r"\b(for|on|to) it\b", r"\1 them"), (r"\bit\b(?=,)", "them"), (r"\bit\b", "they"))
    for one, many in (*plural, (r"\bits\b", "their")):
        reason = re.sub(one, many, reason)
    return f"{names} failed first together: {reason}{waiting}"


def _evidence(fault: Fault, finding: Finding) -> list[Evidence]:
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
