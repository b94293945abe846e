"""Getting the folded views ready for a verdict: every event bound to its process,
communicator and corrected time, and the events cut into faults.

Binding: a device-log helper process (hccp_service) speaks for the training process of its
device; a rank logged without a communicator name is bound to the one its failures name; an
event's communicator is its own group, else the one its op tag is built on, else its
process's. Cutting: per communicator, class and life, runs of events with no gap longer than
the class's timeout; runs of one communicator, or sharing a process, that overlap in time are
one fault (a TP group and the world group failing together), while runs that share nothing
are separate faults.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

from npuwatch.correlation.clocks import describe_offset, host_offsets
from npuwatch.correlation.processes import Directory, Membership, ProcessView
from npuwatch.parsers.hccl.model import CollectiveEvent, ProcessKey

DEFAULT_CONNECT_TIMEOUT_S = 120.0
"""HCCL_CONNECT_TIMEOUT when a process logged none (HCOMM's default)."""
DEFAULT_EXEC_TIMEOUT_S = 1836.0
"""HCCL_EXEC_TIMEOUT when a process logged none (HCOMM's default, 27 × 68 s)."""
LINK_SETUP_EXTRA_S = 20.0
"""HCCL waits HCCL_CONNECT_TIMEOUT + 20 s before it reports a link-setup failure."""
GRACE_S = 60.0

CLASS_OF = {
    "socket": "socket",
    "p2p": "socket",
    "normal": "weak",
    "notify": "notify",
    "ffts": "notify",
    "rootinfo": "rootinfo",
    "transport_init": "transport_init",
    "cqe": "cqe",
    "cluster_exception": "cluster_exception",
    "aicpu_notify": "aicpu_notify",
    "init_failure": "init_failure",
    "probe": "probe",
}
"""Failure classes: the buckets of CORRELATION.md §1.5 (socket takes p2p; FFTS+ goes with
notify). The weak, peerless socket lines (`normal`: `Wait timeout for sockets recv`, `recv
fail`) are a class of their own that never chooses a fault's kind (§5.6): they join the typed
fault of their communicator or process, and alone they locate nothing. HCCL's connection
probe (`probe`) joins the fault of its communicator and is never a fault of its own."""
TIMEOUT_CLASSES = frozenset({"socket", "notify", "rootinfo"})
_CONNECT_CLASSES = frozenset({"socket", "rootinfo", "weak", "init_failure", "probe"})
"""Classes bounded by HCCL_CONNECT_TIMEOUT (the others by HCCL_EXEC_TIMEOUT)."""


class Ev(NamedTuple):
    """An event as the verdict sees it: its process (device-log helpers folded into the
    training process of the same device), communicator, and time on the corrected clock."""

    event: CollectiveEvent
    process: ProcessKey
    communicator: str | None
    time_us: int | None
    cls: str


@dataclass
class Prepared:
    views: dict[ProcessKey, ProcessView]
    directory: Directory
    offsets: dict[str, int]
    events: list[Ev]
    errors: dict[ProcessKey, Ev]
    """Each process's first ERROR of any module."""
    errors_until: dict[ProcessKey, int]
    """Each process's last burst of ERRORs began then (corrected clock)."""
    notes: list[str]
    recovered: frozenset[ProcessKey]
    """Lives followed by a recovery (the next life of the pid began with one)."""

    def timeout_s(self, key: ProcessKey, cls: str) -> float:
        view = self.views.get(key)
        if cls in _CONNECT_CLASSES:
            logged = view.get_float("connect_timeout_s") if view else None
            return logged if logged is not None else DEFAULT_CONNECT_TIMEOUT_S
        logged = view.get_float("exec_timeout_s") if view else None
        return logged if logged is not None else DEFAULT_EXEC_TIMEOUT_S


def prepare(views: dict[ProcessKey, ProcessView]) -> Prepared:
    notes: list[str] = []
    canonical = _fold_helpers(views)
    members = {key: view for key, view in views.items() if canonical.get(key, key) == key}
    memberships = _bind_memberships(members)
    directory = Directory(members, memberships)
    offsets = host_offsets(members)
    if offsets and _splits_a_burst(views, offsets):
        notes.append(
            "the clock offsets init suggests ("
            + ", ".join(describe_offset(h, o).split(" (")[0] for h, o in sorted(offsets.items()))
            + ") would split failures that are tight on the hosts' own clocks: not corrected"
        )
        offsets = {}
    for host, offset in sorted(offsets.items()):
        notes.append(describe_offset(host, offset))
    known = set(directory.communicators)
    events: list[Ev] = []
    errors: dict[ProcessKey, Ev] = {}
    errors_until: dict[ProcessKey, int] = {}
    for key, view in views.items():
        owner = canonical.get(key, key)
        started = _first_init_us(view)
        if started is not None and not any(
            e.time_us is not None and e.time_us >= started - int(GRACE_S * 1e6) for e in view.events
        ):
            started = None  # every failure is before init: the init line is the odd one out
        for event in view.events:
            time_us = None if event.time_us is None else event.time_us - offsets.get(key.host, 0)
            misstamped = (
                started is not None
                and event.time_us is not None
                and event.time_us < started - int(GRACE_S * 1e6)
            )
            if misstamped:
                # stamped before its own process began init: a mis-stamped line opens no fault
                # and sets no time (CORRELATION.md §5.7)
                time_us = None
                notes.append(
                    f"{key.describe()}: a failure line is stamped before the process's first "
                    "init line; its time is not used"
                )
            if event.kind == "error":
                found = errors.get(owner)
                if found is None or (time_us or 0) < (found.time_us or 0):
                    errors[owner] = Ev(event, owner, None, time_us, "error")
                if time_us is not None and time_us > errors_until.get(owner, time_us - 1):
                    errors_until[owner] = time_us
                continue
            communicator = _communicator_of(event, memberships.get(owner, {}), known)
            if not misstamped:  # (a mis-stamped line is said in the notes, and decides nothing)
                events.append(Ev(event, owner, communicator, time_us, CLASS_OF[event.kind]))
    events.sort(key=lambda e: (e.time_us is None, e.time_us or 0, e.process))
    recovered = frozenset(
        ProcessKey(key.host, key.pid, key.incarnation - 1)
        for key, view in members.items()
        if view.resumed
    )
    return Prepared(members, directory, offsets, events, errors, errors_until, notes, recovered)


def _first_init_us(view: ProcessView) -> int | None:
    times = [m.joined_us for m in view.memberships.values() if m.joined_us is not None]
    return min(times) if times else None


def _splits_a_burst(views: dict[ProcessKey, ProcessView], offsets: dict[str, int]) -> bool:
    """Whether correcting the clocks would cut a burst of timeouts of one class that is tight
    on the raw clocks of every host into pieces further apart than the class's timeout
    (CORRELATION.md §5.8: a correction never splits such a burst; the conflict is said)."""
    by_class: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for key, view in views.items():
        for event in view.events:
            cls = CLASS_OF.get(event.kind)
            if cls in TIMEOUT_CLASSES and event.time_us is not None:
                by_class[cls].append((event.time_us, key.host))
    for cls, times in by_class.items():
        if len({host for _, host in times}) < 2:
            continue
        name = "exec_timeout_s" if cls == "notify" else "connect_timeout_s"
        logged = [view.get_float(name) for view in views.values()]
        default = DEFAULT_EXEC_TIMEOUT_S if cls == "notify" else DEFAULT_CONNECT_TIMEOUT_S
        limit = max((value for value in logged if value is not None), default=default) * 1e6
        plain = [time for time, _ in times]
        moved = [time - offsets.get(host, 0) for time, host in times]
        if max(plain) - min(plain) <= limit < max(moved) - min(moved):
            return True
    return False


def failures(prepared: Prepared) -> list[list[Ev]]:
    """The events cut into faults: per communicator, class and life, runs of events with no
    gap longer than the class's timeout; runs of one communicator, or sharing a process, that
    overlap in time are one fault."""
    runs: list[list[Ev]] = []
    by_bucket: dict[tuple[str | None, str, int], list[Ev]] = defaultdict(list)
    for ev in prepared.events:
        by_bucket[(ev.communicator, ev.cls, ev.process.incarnation)].append(ev)
    for (_, cls, _), evs in by_bucket.items():
        window = window_us(prepared, evs, cls)
        run: list[Ev] = []
        for ev in evs:
            previous = run[-1].time_us if run else None
            if previous is not None and ev.time_us is not None and ev.time_us - previous > window:
                runs.append(run)
                run = []
            run.append(ev)
        if run:
            runs.append(run)
    parent = list(range(len(runs)))

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    spans = [_span(run) for run in runs]
    windows = [window_us(prepared, run, run[0].cls) for run in runs]
    by_process: dict[ProcessKey, list[int]] = defaultdict(list)
    by_communicator: dict[str | None, list[int]] = defaultdict(list)
    for index, run in enumerate(runs):
        for key in {ev.process for ev in run}:
            by_process[key].append(index)
        by_communicator[run[0].communicator].append(index)
    for first, second in _waits_across_runs(prepared, runs):
        parent[find(second)] = find(first)  # a wait across a gap is one fault (§5.7)
    for indexes in [*by_process.values(), *by_communicator.values()]:
        ordered = sorted(indexes, key=lambda index: spans[index][0])
        reach = spans[ordered[0]][1] + windows[ordered[0]]
        for previous, index in pairwise(ordered):
            if spans[index][0] - windows[index] <= reach:
                parent[find(index)] = find(previous)
            reach = max(reach, spans[index][1] + windows[index])
    groups: dict[int, list[Ev]] = defaultdict(list)
    for index, run in enumerate(runs):
        groups[find(index)].extend(run)

    return [
        sorted(group, key=lambda e: (e.time_us or 0, e.process))
        for group in groups.values()
        if any(ev.cls != "probe" for ev in group)  # a probe alone is a hint about nothing
    ]


def _waits_across_runs(prepared: Prepared, runs: list[list[Ev]]) -> list[tuple[int, int]]:
    """Pairs of runs of one communicator and class where an event of one names, by rank, a
    process that reported in the other: the chain goes on across the gap."""
    reported: dict[tuple[str | None, str, ProcessKey], int] = {}
    for index, run in enumerate(runs):
        for ev in run:
            reported.setdefault((ev.communicator, ev.cls, ev.process), index)
    pairs: list[tuple[int, int]] = []
    directory = prepared.directory
    for index, run in enumerate(runs):
        for ev in run:
            rank = ev.event.remote_rank
            if rank is None or ev.communicator is None:
                continue
            peer = directory.by_rank(ev.communicator, rank, None)
            other = reported.get((ev.communicator, ev.cls, peer)) if peer is not None else None
            if other is not None and other != index:
                pairs.append((min(index, other), max(index, other)))
    return pairs


def window_us(prepared: Prepared, evs: list[Ev], cls: str) -> int:
    """How long the reports of one failure class may keep coming: the largest timeout its
    processes logged, HCCL's link-setup extra, and a grace."""
    timeout = max((prepared.timeout_s(ev.process, cls) for ev in evs[:64]), default=0.0)
    extra = LINK_SETUP_EXTRA_S if cls in _CONNECT_CLASSES else 0.0
    return int((timeout + extra + GRACE_S) * 1_000_000)


def _span(run: list[Ev]) -> tuple[int, int]:
    times = [ev.time_us for ev in run if ev.time_us is not None]
    return (min(times), max(times)) if times else (0, 0)


def _fold_helpers(views: dict[ProcessKey, ProcessView]) -> dict[ProcessKey, ProcessKey]:
    """Processes that joined no communicator but write about a device (hccp_service in a
    device log) speak for the training process of that device on the same host."""
    owners: dict[tuple[str, int], ProcessKey] = {}
    for key, view in sorted(views.items()):
        device = view.device
        if device is not None and view.memberships:
            owners[(key.host, device)] = key  # the latest life wins
    canonical: dict[ProcessKey, ProcessKey] = {}
    for key, view in views.items():
        device = view.device
        if not view.memberships and device is not None:
            owner = owners.get((key.host, device))
            if owner is not None:
                canonical[key] = owner
    return canonical


def _bind_memberships(
    views: dict[ProcessKey, ProcessView],
) -> dict[ProcessKey, dict[str, Membership]]:
    """Every membership under a communicator name. A line that gave a rank without naming the
    communicator (a Key Info line without its partner, older releases) is bound to the one
    communicator its process's failures name, else to a communicator named by its size."""
    named = {name for view in views.values() for name in view.memberships if name is not None}
    bound: dict[ProcessKey, dict[str, Membership]] = {}
    for key, view in views.items():
        memberships = {name: m for name, m in view.memberships.items() if name is not None}
        unnamed = view.memberships.get(None)
        if unnamed is not None:
            mentioned = {
                name
                for event in view.events
                if (name := _named_communicator(event, named)) is not None
                and name not in memberships
            }
            if len(mentioned) == 1:
                target = mentioned.pop()
            elif len(memberships) == 1 and unnamed.rank is None:
                target = next(iter(memberships))
            else:
                target = f"{unnamed.rank_count or '?'}-rank communicator"
            merged = memberships.get(target)
            if merged is None:
                memberships[target] = unnamed
            else:
                memberships[target] = Membership(
                    merged.rank if merged.rank is not None else unnamed.rank,
                    merged.rank_count or unnamed.rank_count,
                    merged.root or unnamed.root,
                    merged.joined_us,
                    merged.settled_us,
                )
        bound[key] = memberships
    return bound


def _communicator_of(
    event: CollectiveEvent, memberships: dict[str, Membership], known: set[str]
) -> str | None:
    named = _named_communicator(event, known)
    if named is not None:
        return named
    if len(memberships) == 1:
        return next(iter(memberships))
    if memberships:
        return max(memberships, key=lambda name: (memberships[name].rank_count or 0, name))
    return None


def _named_communicator(event: CollectiveEvent, known: set[str]) -> str | None:
    """The communicator an event names: its own group, else the one its op tag is built on
    (`AllReduce_<comm>`, `SendRecv_<comm>_<src>_<dst>`, formats/hccl.md §1.1)."""
    if event.communicator:
        return _match_known(event.communicator, known)
    tag = event.tag
    if not tag:
        return None
    if tag in known:  # `tag[<identifier>]` on a call trace names the communicator itself
        return tag
    prefix, _, rest = tag.partition("_")
    if not rest:
        return _match_known(tag, known) if tag in known else None
    if prefix == "SendRecv":
        parts = rest.rsplit("_", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            rest = parts[0]
    return _match_known(rest, known)


def _match_known(name: str, known: set[str]) -> str:
    if name in known:
        return name
    for candidate in sorted(known, key=len, reverse=True):
        if candidate and candidate in name:
            return candidate
    return name
