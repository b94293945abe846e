"""The timeout classes: link setup (socket), execution (notify, FFTS+) and root-info init.

Each follows CORRELATION.md §1.6 step 4, with the timeouts the processes logged and the
communicator's rank count: a rank that never reported is found even when its logs are missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from npuwatch.correlation.fault import (
    Fault,
    Finding,
    chain_to,
    op_of,
    reporters,
    spread_s,
    waits_on,
)
from npuwatch.correlation.graph import Node, WaitGraph, chain_start, reverse_chain, walk
from npuwatch.correlation.incident import Place
from npuwatch.correlation.init_engine import (
    root_endpoint,
    root_exited,
    unconnected_finding,
)
from npuwatch.correlation.link_engine import link_finding
from npuwatch.correlation.prepare import LINK_SETUP_EXTRA_S, Ev
from npuwatch.parsers.hccl.model import ProcessKey


def timeout_finding(fault: Fault) -> Finding | None:
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


def _socket(fault: Fault, bucket: list[Ev]) -> Finding:
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reported = reporters(bucket)
    tls = {key: fault.prepared.views[key].values.get("tls") for key in with_logs.values()}
    states = Counter(value for value in tls.values() if isinstance(value, bool))
    if len(states) == 2:
        if states[True] == states[False]:  # an even split has no minority: both groups
            roots: list[Node] = [key for key, value in tls.items() if isinstance(value, bool)]
            return Finding(
                "tls_mismatch",
                roots,
                [],
                "TLS is on at one end of the failed links and off at the other",
            )
        minority = min(states, key=lambda state: (states[state], state))
        roots = [key for key, value in tls.items() if value == minority]
        return Finding("tls_mismatch", roots, [], "its TLS switch differs from the other devices'")
    spread = spread_s(reported)
    limit = fault.prepared.timeout_s(bucket[0].process, "socket")
    if not without and len(reported) == len(with_logs) > 1 and spread > limit + LINK_SETUP_EXTRA_S:
        last = list(reported)[-1]
        return Finding(
            "link_setup_timeout_spread",
            [last],
            [],
            f"it reported {spread:,.0f} s after the first, more than the "
            f"{limit:,.0f} s HCCL_CONNECT_TIMEOUT: it reached link setup late",
        )
    graph = fault.graph(bucket)
    found = walk(graph, chain_start(graph, list(reporters(bucket))))
    refined = link_finding(fault, found, bucket)
    if refined is not None:
        return refined
    if found.cycle:
        return Finding(
            "link_setup_wait", found.roots, found.chain, "the ranks wait for each other (a cycle)"
        )
    reason = "the waiting chain of link setup ends at it"
    change = 0.0
    end = found.roots[0]
    if isinstance(end, Place):
        reason += "; it left no logs in this collection"
        change = -0.2
    elif end in reported:
        reason += ", and it names no peer"
        change = -0.2
    return Finding("link_setup_wait", found.roots, found.chain, reason, change)


def _notify(fault: Fault, bucket: list[Ev]) -> Finding:
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reported = reporters(bucket)
    silent: list[Node] = [key for key in with_logs.values() if key not in reported]
    silent += [fault.missing_place(communicator, rank) for rank in without]
    graph = fault.graph(bucket)
    if silent and (with_logs or without):
        named = waits_on(fault, graph)
        pointed = [node for node in silent if named.get(node)]
        roots = pointed or silent
        reason = "ranks timed out waiting for it, and it reported no timeout"
        if all(isinstance(node, Place) for node in roots):
            reason = "ranks timed out waiting for it; it left no logs in this collection"
        return Finding("exec_timeout_missing_rank", roots, chain_to(fault, roots[0], graph), reason)
    spread = spread_s(reported)
    limit = fault.prepared.timeout_s(bucket[0].process, "notify")
    if len(reported) > 1 and spread > limit:
        last = list(reported)[-1]
        return Finding(
            "exec_timeout_spread",
            [last],
            [],
            f"it reported {spread:,.0f} s after the first, more than the "
            f"{limit:,.0f} s HCCL_EXEC_TIMEOUT its processes logged: it arrived late",
        )
    params = _parameters(bucket)
    if len(params) > 1:
        rarest, usual = _rarest_and_usual(params)
        return Finding(
            "exec_param_mismatch",
            list(params[rarest]),
            [],
            f"it ran the collective with {rarest} while {len(params[usual])} others ran "
            f"it with {usual}",
        )
    indexes = {ev.process: ev.event.op_index for ev in bucket if ev.event.op_index is not None}
    if len(set(indexes.values())) > 1:
        smallest = min(indexes.values())
        roots = [key for key, index in indexes.items() if index == smallest]
        return Finding(
            "exec_timeout_op_index",
            roots,
            [],
            f"it stopped at op index {smallest}, behind the others",
        )
    tags = _reporters_by(bucket, lambda ev: ev.event.tag)
    if len(tags) > 1:
        rarest, usual = _rarest_and_usual(tags)
        return Finding(
            "exec_timeout_op_tag",
            list(tags[rarest]),
            [],
            f"it timed out in {op_of(rarest)} while {len(tags[usual])} others were in "
            f"{op_of(usual)}: the call order diverged",
        )
    return _notify_walk(fault, graph, bucket)


_SAME_COUNT_OPS = frozenset({"allreduce", "allgather", "reducescatter", "broadcast", "reduce"})
"""Collectives whose every rank passes the same count and data type (an AllToAllV or a
send/receive pair may differ by design)."""


def _parameters(bucket: list[Ev]) -> dict[str, list[ProcessKey]]:
    """The ranks by the parameters they called one collective with: the same tag and op
    index everywhere, of an op whose parameters must agree."""
    ops = {(ev.event.tag, ev.event.op_index) for ev in bucket if ev.event.detail}
    if len(ops) != 1:
        return {}
    tag, _ = next(iter(ops))
    if not tag or op_of(tag).lower() not in _SAME_COUNT_OPS:
        return {}
    return _reporters_by(bucket, lambda ev: ev.event.detail)


def _reporters_by(
    bucket: list[Ev], value: Callable[[Ev], str | None]
) -> dict[str, list[ProcessKey]]:
    """The reporters grouped by a value of their events (an op tag, the op's parameters),
    each once, in the order they reported."""
    groups: dict[str, list[ProcessKey]] = {}
    for ev in bucket:
        said = value(ev)
        if said:
            members = groups.setdefault(said, [])
            if ev.process not in members:
                members.append(ev.process)
    return groups


def _rarest_and_usual(groups: dict[str, list[ProcessKey]]) -> tuple[str, str]:
    def size(found: str) -> tuple[int, str]:
        return (len(groups[found]), found)

    return min(groups, key=size), max(groups, key=size)


def _notify_walk(fault: Fault, graph: WaitGraph, bucket: list[Ev]) -> Finding:
    degree = graph.in_degree()
    own = [key for key in graph.waits_on_itself if degree.get(key)]
    if own:
        chain = reverse_chain(graph, own[0])
        return Finding(
            "notify_own_stream", list(own), chain, "it waited on its own stream; the others on it"
        )
    crowded = sorted((node for node in degree if degree[node] > 1), key=lambda n: -degree[n])
    if crowded:
        found = walk(graph, crowded[0])
    elif graph.edges and all(len(targets) == 1 for targets in graph.edges.values()):
        found = walk(graph, bucket[0].process)
    else:
        return Finding(
            "exec_timeout_unlocated", [], [], "the ranks' waits do not point at one rank"
        )
    if found.cycle:
        cycle = ", ".join(fault.place(node).label() for node in found.roots)
        return Finding(
            "notify_deadlock",
            [],
            found.chain,
            f"{cycle} wait on each other in a cycle (a deadlock in the "
            "operator order; their Entry- sequences diverge)",
        )
    end = found.roots[0]
    if isinstance(end, Place):
        return Finding(
            "exec_timeout_missing_rank", [end], found.chain, "the waits end at a rank without logs"
        )
    return Finding(
        "exec_timeout_unlocated",
        [end],
        found.chain,
        "the waits end at it, but it names no peer",
        -0.1,
    )


def _rootinfo(fault: Fault, bucket: list[Ev]) -> Finding:
    engine = unconnected_finding(fault, bucket)
    if engine is not None:
        return engine
    communicator = bucket[0].communicator
    with_logs, without = fault.members(communicator)
    reported = reporters(bucket)
    found = fault.directory.communicators.get(communicator or "")
    root = found.root if found is not None else None
    connected = next(
        (ev.event.connected_ranks for ev in bucket if ev.event.connected_ranks is not None), None
    )
    if connected is not None:
        never = [rank for rank in without if rank not in connected]
        if never:
            roots: list[Node] = [fault.missing_place(communicator, rank) for rank in never]
            return Finding(
                "init_never_connected", roots, [], "it never connected to the root and left no logs"
            )
    exited = root_exited(fault, root, bucket) if root is not None else None
    if exited is not None:
        return exited
    if root is not None and root not in reported:
        return Finding(
            "init_root_unreachable",
            [root],
            chain_to(fault, root),
            "it holds the root rank, and it never answered",
        )
    silent: list[Node] = [key for key in with_logs.values() if key not in reported]
    if silent:
        return Finding(
            "init_missing_rank", silent, [], "it never reported, while the others timed out joining"
        )
    spread = spread_s(reported)
    limit = fault.prepared.timeout_s(bucket[0].process, "rootinfo")
    if len(reported) > 1 and spread > limit + LINK_SETUP_EXTRA_S:
        return Finding(
            "init_timeout_spread", [list(reported)[-1]], [], f"it started {spread:,.0f} s late"
        )
    if root is not None:
        return Finding(
            "init_root_unreachable", [root], [], "it holds the root rank the others could not reach"
        )
    ip, port = root_endpoint(communicator)
    if ip is not None:  # every member's init line names the root's endpoint (§5.10)
        place = fault.place(
            Place(
                host=fault.directory.host_of_ip.get(ip),
                address=f"{ip}:{port}" if port else ip,
                communicator=communicator,
                has_logs=False,
            )
        )
        return Finding(
            "init_root_unreachable",
            [place],
            [],
            "it holds the root the others could not reach; its logs are not in this collection",
            -0.2,
        )
    return Finding(
        "init_root_unreachable", [], [], "the root rank's logs are not in this collection", -0.3
    )
