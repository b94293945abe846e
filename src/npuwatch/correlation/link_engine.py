"""Link setup between two ranks: which end broke the link (formats/hccl-init-and-link.md §2.2,
mscommreport's engine B, done where it goes wrong).

The waiting chain of link setup (CORRELATION.md §1.5) ends at one link: the last waiter and
the rank it waited for, or the two members of a mutual wait. Of that link, the server is the
end the LINK_ERROR_INFO row calls so (`MyRole`), else the smaller rank (HCCL's rule). Then,
first match wins: a server that never listened; a client that never connected; a server that
had stopped logging before the client connected (it exited); a client that had stopped
logging before the server gave up, without connecting (it exited); a client whose every
connect came after the server had given up (late); TLS on at one end only; else the network
between them, and both ends are the root cause. Unlike mscommreport, the link examined is the
chain's end, not its start, and a rule asks only about run logs that are there: when neither
end's run log was collected, nothing is said beyond the chain.
"""

from __future__ import annotations

from npuwatch.correlation.fault import Fault, Finding, reporters
from npuwatch.correlation.graph import Node, Walk
from npuwatch.correlation.prepare import Ev
from npuwatch.correlation.processes import ProcessView
from npuwatch.parsers.hccl.model import ProcessKey


def link_finding(fault: Fault, found: Walk, bucket: list[Ev]) -> Finding | None:
    """The verdict on the link the chain ends at. An end that never reported and whose logs
    end before the other gave up is the one that exited (or hung); one that still logged
    stays FaultDiag's verdict (108, that end). When both ends reported, the rules asked are
    the ones of the side that reported first (the row's view, as mscommreport's)."""
    pair = _link(found)
    if pair is None:
        return None
    waiter, peer = pair
    row = next(
        (ev for ev in bucket if ev.process == waiter and ev.event.link_role is not None), None
    )
    server, client = _roles(fault, waiter, peer, row)
    views = fault.prepared.views
    vs, vc = views.get(server), views.get(client)
    if vs is None or vc is None:
        return None
    chain: list[Node] = list(found.chain)
    first = reporters(bucket)
    timeout_us = int(fault.prepared.timeout_s(waiter, "socket") * 1e6)
    logged = _views(fault, bucket)
    connects_logged = any(view.step_times("connect", None) for view in logged)
    if peer not in first:
        return _silent_end(
            fault, peer, waiter, server, first.get(waiter), timeout_us, chain, connects_logged
        )
    label_s, label_c = fault.place(server).label(), fault.place(client).label()
    server_first = (first.get(server) or 0) <= (first.get(client) or 0)
    t_err = first.get(server) if server_first else first.get(client)
    # the server's address as the client knows it: the row's destination when the client
    # wrote the row, else the server's device IP
    server_ip = row.event.remote_ip if row is not None and waiter == client else None
    server_ip = server_ip or vs.get_str("device_ip")
    connects = vc.step_times("connect", server_ip)
    # a step is missing only where the collection records that kind of step at all
    listens_logged = any(view.step_times("listen", None) for view in logged)
    listened = vs.step_times("listen", server_ip)
    if not server_first and listens_logged and vs.steps and not listened:
        return Finding(
            "link_server_not_listening",
            [server],
            chain,
            f"it is the server of the link to {label_c} and never listened for it",
        )
    if connects_logged and vc.steps and not connects:
        return Finding(
            "link_client_not_connected",
            [client],
            chain,
            f"it is the client of the link to {label_s} and never connected",
        )
    if not server_first and connects and vs.last_us is not None and vs.last_us < min(connects):
        return Finding(
            "link_server_exited",
            [server],
            chain,
            f"it is the server of the link to {label_c} and stopped logging before the client "
            "connected",
        )
    if server_first and connects and t_err is not None and all(t > t_err for t in connects):
        return Finding(
            "link_client_late",
            [client],
            chain,
            f"it is the client of the link to {label_s} and connected only after the server "
            "had given up",
        )
    tls = (vs.values.get("tls"), vc.values.get("tls"))
    if all(isinstance(state, bool) for state in tls) and tls[0] != tls[1]:
        return Finding(
            "tls_mismatch",
            [server, client],
            chain,
            "TLS is on at one end of the link and off at the other",
        )
    if listened and connects:
        return Finding(
            "link_network",
            [server, client],
            chain,
            "they are the two ends of the link: the server listened and the client connected "
            "in time, and they never met",
        )
    return None


def _silent_end(
    fault: Fault,
    silent: ProcessKey,
    waiter: ProcessKey,
    server: ProcessKey,
    waited_until: int | None,
    timeout_us: int,
    chain: list[Node],
    connects_logged: bool,
) -> Finding | None:
    """The end of the link that reported nothing: exited (or hung) when its logs end before
    the other end had waited its whole timeout; when it kept logging, a server that reported
    no error at all, or a client that never connected, never reached the op (rules 4, 12)."""
    view = fault.prepared.views.get(silent)
    if view is None or view.last_us is None or waited_until is None:
        return None
    role = "server" if silent == server else "client"
    label = fault.place(waiter).label()
    if view.last_us >= waited_until - timeout_us:  # it kept logging: it never reached the op
        if role == "server" and fault.prepared.errors.get(silent) is None:
            return Finding(
                "link_server_no_error",
                [silent],
                chain,
                f"it is the server of the link to {label}, kept logging and reported no error "
                "at all: it never reached the op",
            )
        others = fault.prepared.views.get(waiter)
        waiter_ip = others.get_str("device_ip") if others is not None else None
        if role == "client" and connects_logged and not view.step_times("connect", waiter_ip):
            return Finding(
                "link_client_not_connected",
                [silent],
                chain,
                f"it is the client of the link to {label}, kept logging and never connected: "
                "it never launched the op",
            )
        return None
    return Finding(
        f"link_{role}_exited",
        [silent],
        chain,
        f"it is the {role} of the link to {fault.place(waiter).label()}, and its logs end "
        "before the other end began waiting for it: its process exited (or hung)",
    )


def _views(fault: Fault, bucket: list[Ev]) -> list[ProcessView]:
    views = fault.prepared.views
    return [views[key] for key in dict.fromkeys(ev.process for ev in bucket) if key in views]


def _link(found: Walk) -> tuple[ProcessKey, ProcessKey] | None:
    """The link the chain ends at: a mutual wait of two, or the last waiter and its peer."""
    if found.cycle:
        members = [node for node in found.roots if isinstance(node, ProcessKey)]
        if len(members) == 2 == len(found.roots):
            return members[0], members[1]
        return None
    end = found.roots[0]
    if isinstance(end, ProcessKey) and len(found.chain) > 1:
        waiter = found.chain[-2]
        if isinstance(waiter, ProcessKey):
            return waiter, end
    return None


def _roles(
    fault: Fault, waiter: ProcessKey, peer: ProcessKey, row: Ev | None
) -> tuple[ProcessKey, ProcessKey]:
    """(server, client) of the link: the row's `MyRole`, else the smaller rank is the server."""
    role = row.event.link_role if row is not None else None
    if role == "server":
        return waiter, peer
    if role == "client":
        return peer, waiter
    ranks = (fault.place(waiter).rank, fault.place(peer).rank)
    if ranks[0] is not None and ranks[1] is not None and ranks[1] < ranks[0]:
        return peer, waiter
    return waiter, peer
