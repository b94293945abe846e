"""Communicator init through root info: which ranks never reached the root, and why
(formats/hccl-init-and-link.md §2.1, mscommreport's engine A, done where it goes wrong).

The root is the process that logged the root side of the timeout (HCCL never prints the root's
rank; it is not assumed to be rank 0). The unconnected ranks are the communicator's ranks
minus the ones the root listed as connected. Then, first match wins: a host interface that
differs from the root's; ranks that never called init; a root that never listened; ranks that
never sent their request; a root that had stopped logging before they did; requests outside
the root's window; a cluster too large for the listen backlog; else the network path.
A rule asks only about what the logs hold: a process whose run log is absent is not said to
have skipped a step.
"""

from __future__ import annotations

from npuwatch.correlation.fault import Fault, Finding
from npuwatch.correlation.graph import Node
from npuwatch.correlation.prepare import Ev
from npuwatch.parsers.hccl.model import ProcessKey

LARGE_CLUSTER_RANKS = 1000
"""Above this many ranks the root's listen backlog can overflow (kernel defaults)."""
_WINDOW_SLACK_US = 1_000_000


def unconnected_finding(fault: Fault, bucket: list[Ev]) -> Finding | None:
    """The engine's verdict, or None when the root's list of connected ranks is not known."""
    communicator = bucket[0].communicator
    roots_side = [ev for ev in bucket if ev.event.root_side]
    connected = next(
        (ev.event.connected_ranks for ev in roots_side if ev.event.connected_ranks is not None),
        None,
    )
    count = fault.rank_count(communicator)
    if not roots_side or count is None:
        return None
    if connected is None and any(ev.event.remote_rank is not None for ev in roots_side):
        return None  # the root got past accepting (`GetRankBasicInfo from agentId[..] failed`)
    root = roots_side[0].process
    with_logs, _ = fault.members(communicator)
    reached = set(connected or ())
    unconnected = [rank for rank in range(count) if rank not in reached]
    if not unconnected:
        return None
    present = {rank: with_logs[rank] for rank in unconnected if rank in with_logs}
    absent = [rank for rank in unconnected if rank not in with_logs]
    views = fault.prepared.views
    root_view = views.get(root)
    root_ip, root_port = root_endpoint(communicator)
    t_err = roots_side[0].time_us
    said = roots_side[0].event.timeout_s  # the line's own `timeout[600 s]` is the one that fired
    timeout_us = int((said or fault.prepared.timeout_s(root, "rootinfo")) * 1e6)

    nic = root_view.get_str("host_nic") if root_view else None
    differing = [
        key
        for key in present.values()
        if nic is not None and views[key].get_str("host_nic") not in (None, nic)
    ]
    if differing:
        others = sorted({views[key].get_str("host_nic") or "" for key in differing})
        return Finding(
            "init_nic_mismatch",
            list(differing),
            [],
            f"it chose host interface {', '.join(others)} while the root listens on {nic}",
        )
    if absent:
        return _never_called(fault, communicator, absent, root, bucket)
    if root_view is not None and root_view.steps and root_ip is not None and t_err is not None:
        listens = root_view.step_times("listen", root_ip)
        start = t_err - timeout_us
        if not any(time <= start + _WINDOW_SLACK_US for time in listens):
            return Finding(
                "init_root_not_listening",
                [root],
                [],
                f"it never listened on {root_ip}:{root_port} while the ranks tried to join",
            )
    # a missing connect is said only where the collection logs connects at all (HCCP's run
    # lines); a rank whose init entry is there has its run log there
    connects_logged = any(
        views[key].step_times("connect", None) for key in with_logs.values() if key in views
    )
    logged = {rank: key for rank, key in present.items() if views[key].steps or connects_logged}
    silent = [key for key in logged.values() if not views[key].step_times("connect", root_ip)]
    if silent:
        return Finding(
            "init_no_connect", list(silent), [], "it called init but never sent its request"
        )
    connects = {key: views[key].step_times("connect", root_ip) for key in logged.values()}
    root_last = root_view.last_us if root_view is not None else None
    late = [
        key
        for key, times in connects.items()
        if root_last is not None and any(t > root_last for t in times)
    ]
    if late and root_last is not None and (t_err is None or root_last < t_err):
        return Finding(
            "init_root_exited",
            [root],
            [],
            "it stopped logging before the ranks sent their requests: it exited",
        )
    if t_err is not None:
        outside = [
            key
            for key, times in connects.items()
            if times and all(t > t_err or t + timeout_us < t_err - timeout_us for t in times)
        ]
        if outside:
            return Finding(
                "init_window_missed",
                list(outside),
                [],
                "its requests came outside the time the root was waiting",
            )
    if count > LARGE_CLUSTER_RANKS:
        return Finding(
            "init_large_cluster",
            list(present.values()),
            [],
            f"{len(unconnected)} of {count} ranks never got in although their requests went out "
            "in time: the root's listen backlog overflowed",
        )
    return Finding(
        "init_rank_not_connected",
        list(present.values()),
        [],
        f"it called init and tried to reach the root at {root_ip}:{root_port}, and never did",
    )


def root_exited(fault: Fault, root: ProcessKey, bucket: list[Ev]) -> Finding | None:
    """A root that printed no timeout of its own, whose logs end before the ranks sent their
    requests: it exited during init (rule 30 without the root's side of the timeout, which an
    exited root never prints)."""
    if any(ev.process == root and ev.event.root_side for ev in bucket):
        return None
    view = fault.prepared.views.get(root)
    if view is None or view.last_us is None:
        return None
    root_ip, _ = root_endpoint(bucket[0].communicator)
    reporters = {ev.process for ev in bucket if ev.process != root}
    connects = [
        time
        for key in reporters
        if key in fault.prepared.views
        for time in fault.prepared.views[key].step_times("connect", root_ip)
    ]
    if not any(time > view.last_us for time in connects):
        return None  # (a root silent with no request logged after it: FaultDiag's 118)
    return Finding(
        "init_root_exited",
        [root],
        [],
        "it holds the root, and its logs end before the ranks' requests came: it exited",
    )


def root_endpoint(communicator: str | None) -> tuple[str | None, str | None]:
    """The root's host IP and port from a root-info identifier `<ip>%<if>_<port>_<n>_<µs>`."""
    if not communicator or "%" not in communicator:
        return None, None
    ip, _, rest = communicator.partition("%")
    parts = rest.split("_")
    port = parts[1] if len(parts) > 1 and parts[1].isdigit() else None
    return ip or None, port


def _never_called(
    fault: Fault, communicator: str | None, absent: list[int], root: ProcessKey, bucket: list[Ev]
) -> Finding:
    """Ranks no process of the collection joined as. When processes of the communicator's
    hosts logged but never joined anything (nor were its root), they are ranks that never
    called init; when exactly one such process and one such rank remain, they are one."""
    hosts = {key.host for key, _ in _members_of(fault, communicator)} | {root.host}
    reporting = {ev.process for ev in bucket if ev.event.root_side}
    strangers = [
        key
        for key, view in fault.prepared.views.items()
        if key.host in hosts and not view.memberships and key not in reporting
    ]
    if not strangers:
        roots: list[Node] = [fault.missing_place(communicator, rank) for rank in absent]
        return Finding(
            "init_never_connected", roots, [], "it never connected to the root and left no logs"
        )
    if len(strangers) == 1 and len(absent) == 1:
        stranger = fault.place(strangers[0])
        roots = [stranger._replace(rank=absent[0], communicator=communicator)]
        fault.notes.append(
            f"{stranger.label()} logged but joined no communicator: taken as rank {absent[0]}, "
            "the only rank no process joined as"
        )
    else:
        roots = [fault.missing_place(communicator, rank) for rank in absent]
    return Finding(
        "init_rank_not_called",
        roots,
        [],
        "no process joined as it: it never called communicator init, and the root waited",
    )


def _members_of(fault: Fault, communicator: str | None) -> list[tuple[ProcessKey, int]]:
    with_logs, _ = fault.members(communicator)
    return [(key, rank) for rank, key in with_logs.items()]
