"""What the facts say about each process, and the lookups that turn a peer into a process.

A ProcessView folds the facts of one life in time order (lives.py gives them so). The Directory
is built from all views when a verdict is asked for: communicator → rank → process, device IP,
(server, device), (host, vNIC), (host, physical id) → process, as FaultDiag's device table
(CORRELATION.md §1.4), but a duplicate claim is kept as a problem instead of silently
overwriting.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from npuwatch.parsers.hccl.model import (
    COMMUNICATOR_FACTS,
    IDENTITY_FACTS,
    CollectiveEvent,
    ProcessKey,
)

STEP_FACTS = frozenset({"listen", "connect", "setting"})
"""Facts kept each time they are said (with time and socket tag), not only the latest: the
network steps, and every setting (one fact name for many variables)."""

FactParts = tuple[str, str | int | float | bool, int | None, str | None]
"""A fact as a process's log keeps it: name, value, time and communicator (`Fact[1:5]`). Not
the process (the log's), nor the evidence (never shown for a fact): a plain tuple of plain
values, which the garbage collector stops tracking, where a Fact is tracked as long as it
lives."""


@dataclass
class Membership:
    rank: int | None = None
    rank_count: int | None = None
    root: bool = False
    joined_us: int | None = None
    settled_us: int | None = None
    """The latest init line of any kind."""
    rendezvous_us: int | None = None
    """The latest line printed after the root-info exchange completed (`hcclCommInitInfo`,
    Key Info, `… success, take time`): a rendezvous of every member, unlike the init entry,
    which members may reach HCCL_CONNECT_TIMEOUT apart (CORRELATION.md §5.8)."""


@dataclass
class ProcessView:
    """One life of one process: its identity, memberships and failures, folded."""

    key: ProcessKey
    values: dict[str, object] = field(default_factory=dict)
    memberships: dict[str | None, Membership] = field(default_factory=dict)
    first_us: int | None = None
    last_us: int | None = None
    resumed: bool = False
    events: list[CollectiveEvent] = field(default_factory=list)
    dropped: int = 0
    problems: list[str] = field(default_factory=list)
    steps: list[FactParts] = field(default_factory=list)
    """The network steps of init and link setup (STEP_FACTS), in the order said."""

    def add_facts(self, facts: Iterable[FactParts]) -> None:
        """Fold facts in the order given (the hot path of the correlator: every fact of every
        process goes through this loop, so it keeps what it uses in locals)."""
        values, memberships = self.values, self.memberships
        first, last = self.first_us, self.last_us
        for name, value, time_us, communicator in facts:
            if time_us is not None:
                if first is None or time_us < first:
                    first = time_us
                if last is None or time_us > last:
                    last = time_us
            if name in STEP_FACTS:
                self.steps.append((name, value, time_us, communicator))
            elif name in COMMUNICATOR_FACTS:
                membership = memberships.get(communicator)
                if membership is None:
                    membership = memberships[communicator] = Membership(joined_us=time_us)
                elif membership.joined_us is None:
                    membership.joined_us = time_us
                if time_us is not None and (
                    membership.settled_us is None or time_us > membership.settled_us
                ):
                    membership.settled_us = time_us
                if name == "root":
                    membership.root = True
                elif name == "rendezvous":
                    if time_us is not None and (
                        membership.rendezvous_us is None or time_us > membership.rendezvous_us
                    ):
                        membership.rendezvous_us = time_us
                elif isinstance(value, int) and not isinstance(value, bool):
                    self._set_rank(membership, name, value, communicator)
            elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
                self.problems.append(f"{self.key.describe()}: {name} {value} is negative")
            else:
                old = values.get(name)
                if old is not None and old != value and name in ("phy_device", "logic_device"):
                    self.problems.append(f"{self.key.describe()}: {name} {old} and then {value}")
                values[name] = value
        self.first_us, self.last_us = first, last

    def _set_rank(
        self, membership: Membership, name: str, value: int, communicator: str | None
    ) -> None:
        """`rank` or `rank_count` of a membership; a change or a negative number is a problem."""
        if value < 0:
            self.problems.append(f"{self.key.describe()}: {name} {value} is negative")
            return
        old = getattr(membership, name)
        if old is not None and old != value:
            self.problems.append(
                f"{self.key.describe()}: {name} {old} and {value} in "
                f"{communicator or 'one communicator'}"
            )
        setattr(membership, name, value)

    def add_event(self, event: CollectiveEvent) -> None:
        self.heard(event.time_us)
        self.events.append(event)

    def heard(self, time_us: int | None) -> None:
        if time_us is None:
            return
        if self.first_us is None or time_us < self.first_us:
            self.first_us = time_us
        if self.last_us is None or time_us > self.last_us:
            self.last_us = time_us

    def settings(self) -> dict[str, str]:
        """The process's settings, variable → value (the latest value of each)."""
        found: dict[str, str] = {}
        for step, value, _, _ in self.steps:
            if step == "setting":
                variable, _, said = str(value).partition("=")
                found[variable] = said
        return found

    def step_times(self, name: str, ip: str | None) -> list[int]:
        """Times of the process's `listen` or `connect` steps (towards or on `ip` when given)."""
        found: list[int] = []
        for step, value, time_us, _ in self.steps:
            if step != name or time_us is None:
                continue
            address = str(value).rsplit(":", 1)[0] if name == "listen" else str(value)
            if ip is None or address == ip:
                found.append(time_us)
        return found

    def get_int(self, name: str) -> int | None:
        value = self.values.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def get_str(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if isinstance(value, str) else None

    def get_float(self, name: str) -> float | None:
        value = self.values.get(name)
        return (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    @property
    def device(self) -> int | None:
        physical = self.get_int("phy_device")
        return physical if physical is not None else self.get_int("logic_device")

    def inherit(self, earlier: ProcessView) -> None:
        """A recovered life keeps the identity of the life before it."""
        for name in IDENTITY_FACTS:
            if name not in self.values and name in earlier.values:
                self.values[name] = earlier.values[name]
        for communicator, membership in earlier.memberships.items():
            self.memberships.setdefault(
                communicator,
                Membership(membership.rank, membership.rank_count, membership.root),
            )


@dataclass
class Communicator:
    name: str
    rank_count: int | None = None
    ranks: dict[int, list[ProcessKey]] = field(default_factory=lambda: defaultdict(list))
    root: ProcessKey | None = None


class Directory:
    """Every way a log line names a peer, resolved to a process."""

    def __init__(
        self,
        views: dict[ProcessKey, ProcessView],
        memberships: dict[ProcessKey, dict[str, Membership]],
    ) -> None:
        self.views = views
        self.memberships = memberships
        self.communicators: dict[str, Communicator] = {}
        self.by_device_ip: dict[str, ProcessKey] = {}
        self.by_server_device: dict[tuple[str, int], ProcessKey] = {}
        self.by_host_device: dict[tuple[str, int], ProcessKey] = {}
        self.by_host_vnic: dict[tuple[str, str], ProcessKey] = {}
        self.host_of_ip: dict[str, str] = {}
        self.by_link_ip: dict[str, ProcessKey | None] = {}
        """Addresses processes gave as their own (LINK_ERROR_INFO rows' sources, listens); None
        where two processes gave one (a vNIC address repeats on every host)."""
        self.problems: list[str] = []
        self._own_hosts: dict[str, set[str]] = {}
        for key in sorted(views, key=lambda k: (views[k].first_us or 0, k)):
            self._add(views[key], memberships.get(key, {}))
        for address, hosts in self._own_hosts.items():
            if len(hosts) == 1:  # a vNIC address every host has names no host
                self.host_of_ip.setdefault(address, next(iter(hosts)))

    def _add(self, view: ProcessView, memberships: dict[str, Membership]) -> None:
        key = view.key
        for name, membership in memberships.items():
            communicator = self.communicators.get(name)
            if communicator is None:
                communicator = self.communicators[name] = Communicator(name)
            count = membership.rank_count
            if count is not None:
                if communicator.rank_count not in (None, count):
                    self.problems.append(
                        f"{name}: rank counts {communicator.rank_count} and {count} disagree"
                    )
                communicator.rank_count = max(count, communicator.rank_count or 0)
            rank = membership.rank
            if rank is not None:
                if count is not None and rank >= count:
                    self.problems.append(
                        f"{key.describe()}: rank {rank} in {name} of {count} ranks"
                    )
                claims = communicator.ranks[rank]
                if claims and not any(_same_pid(other, key) for other in claims):
                    self.problems.append(
                        f"{name}: rank {rank} claimed by {claims[-1].describe()} and "
                        f"{key.describe()}"
                    )
                claims.append(key)
            if membership.root:
                communicator.root = key
        self._claim(self.by_device_ip, view.get_str("device_ip"), key, "device IP")
        server = view.get_str("server_ip") or view.get_str("host_ip")
        device = view.device
        if server is not None and device is not None:
            self._claim(self.by_server_device, (server, device), key, "server and device")
        if device is not None and memberships:
            self._claim(self.by_host_device, (key.host, device), key, "host and device")
        own = {view.get_str("link_ip")} | {
            str(value).rsplit(":", 1)[0] for step, value, _, _ in view.steps if step == "listen"
        }
        for address in own - {None}:
            # an address a process logged as its own (a row's source, a listen): it names the
            # process where no other process logged it, and its host in any case (§5.14)
            assert address is not None
            other = self.by_link_ip.get(address, key)
            self.by_link_ip[address] = key if other is not None and _same_pid(other, key) else None
            self._own_hosts.setdefault(address, set()).add(key.host)
        vnic = view.get_str("vnic_ip")
        if vnic is not None:
            self.by_host_vnic[(key.host, vnic)] = key
        for ip in (view.get_str("server_ip"), view.get_str("host_ip")):
            if ip is not None:
                self.host_of_ip.setdefault(ip, key.host)

    def _claim(self, table: dict, item: object, key: ProcessKey, what: str) -> None:  # type: ignore[type-arg]
        if item is None:
            return
        other = table.get(item)
        if other is not None and not _same_pid(other, key):
            self.problems.append(
                f"{what} {_show(item)} claimed by {other.describe()} and {key.describe()}"
            )
        table[item] = key  # the process that started later wins, as in FaultDiag

    def rank_of(self, key: ProcessKey, communicator: str | None) -> int | None:
        membership = self.memberships.get(key, {}).get(communicator or "")
        return None if membership is None else membership.rank

    def by_rank(
        self, communicator: str | None, rank: int, time_us: int | None
    ) -> ProcessKey | None:
        if communicator is None or communicator not in self.communicators:
            return None
        claims = self.communicators[communicator].ranks.get(rank)
        if not claims:
            return None
        if time_us is None or len(claims) == 1:
            return claims[-1]
        started = [k for k in claims if (self.views[k].first_us or 0) <= time_us]
        return started[-1] if started else claims[0]


def _same_pid(one: ProcessKey, other: ProcessKey) -> bool:
    return one.host == other.host and one.pid == other.pid


def _show(item: object) -> str:
    if isinstance(item, tuple):
        return "/".join(str(part) for part in item)
    return str(item)
