"""What HCCL's lines say about a job: topology facts and typed collective-failure events.

Both are plain data, made by the extractor from records and read by the correlator
(`npuwatch.correlation`), offline in `scan` and, later, live in the cluster service:
nothing here knows files or time sources. The line formats are in formats/hccl.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple


class ProcessKey(NamedTuple):
    """A pid on a host, and which life of it: the extractor says only host and pid (it cannot
    know the lives, since a process's files come in any order); the correlator cuts each
    process into lives at the times of its restarts (a second `[HCCL_ENV]` block) and
    recoveries (`HcclCommResume:success`), so that facts and failures of an earlier life are
    never mixed with the current one. (A named tuple: it keys every table of the correlator,
    and a tuple hashes and compares in C.)"""

    host: str
    pid: int
    incarnation: int = 0

    def describe(self) -> str:
        life = f" (life {self.incarnation + 1})" if self.incarnation else ""
        return f"{self.host or '-'} pid {self.pid}{life}"


class Evidence(NamedTuple):
    """A line that supports a fact or an event, for display: file, line number, text. (One
    per line, shared by every fact the line gives.)"""

    file: str | None
    line: int | None
    text: str
    time_us: int | None
    offset: int | None = None
    """The line's byte offset in its file: where an agent, which reads files from a checkpoint
    and does not count their lines, can still say where the line is."""

    def to_dict(self) -> dict[str, object]:
        found: dict[str, object] = {"file": self.file, "line": self.line, "text": self.text}
        if self.line is None and self.offset is not None:
            found["offset"] = self.offset
        return found

    def place(self) -> str:
        """`FILE:LINE`, else `FILE (byte N)`, else `FILE`; `-` for a line of no known file."""
        file = self.file or "-"
        if self.line is not None:
            return f"{file}:{self.line}"
        if self.offset is not None:
            return f"{file} (byte {self.offset})"
        return file


FactName = Literal[
    "process_name",
    "logic_device",
    "phy_device",
    "device_ip",
    "vnic_ip",
    "server_ip",
    "host_ip",
    "connect_timeout_s",
    "exec_timeout_s",
    "rdma_timeout",
    "rdma_retry_count",
    "tls",
    "rank",
    "rank_count",
    "root",
    "rendezvous",
    "resumed",
    "heard",
    "events_dropped",
    "hccl_env",
    "host_nic",
    "setting",
    "link_ip",
    "listen",
    "connect",
]
"""Process facts (device ids, addresses, timeouts, TLS) and communicator facts (`rank`,
`rank_count`, `root`: the process hosts the communicator's root rank; `rendezvous`: a line
printed after the root-info exchange completed, the time clocks are compared at). `resumed`
(a recovery) starts a new life that keeps the identity of the one before; `hccl_env` is the
time a variable of the `[HCCL_ENV]` block was printed (once per life: the second time is a
restart); `setting` is `<VAR>=<value>` of a settings line, compared across processes.
`host_nic` is the host interface HCCL chose; `link_ip` an address of this device as
the source of a LINK_ERROR_INFO row (a device NIC or a vNIC: it names the device only where no
other process uses it); `listen` (`ip:port`) and `connect` (a remote IP, with the socket tag as
communicator) are the network steps of init and link setup. `heard` is the time of a record:
how long the process kept writing. `events_dropped` counts failure events past the per-process
cap (their count is kept, their details are not)."""

COMMUNICATOR_FACTS = frozenset({"rank", "rank_count", "root", "rendezvous"})
IDENTITY_FACTS: tuple[FactName, ...] = (
    "process_name",
    "logic_device",
    "phy_device",
    "device_ip",
    "vnic_ip",
    "server_ip",
    "host_ip",
    "connect_timeout_s",
    "exec_timeout_s",
    "rdma_timeout",
    "rdma_retry_count",
    "tls",
)
"""The facts of a process (not of a communicator, nor a marker of its lives)."""


class Fact(NamedTuple):
    """One thing a line says about a process or its place in a communicator. (A named tuple:
    a large job has hundreds of thousands of them, and a tuple is the cheapest to make.)"""

    process: ProcessKey
    name: FactName
    value: str | int | float | bool
    time_us: int | None
    communicator: str | None = None
    """For `rank`, `rank_count` and `root`; None when the line did not name it (it is then
    bound to the communicator the process's other lines name)."""
    evidence: Evidence | None = None


EventKind = Literal[
    "cqe",
    "cluster_exception",
    "transport_init",
    "socket",
    "p2p",
    "notify",
    "ffts",
    "rootinfo",
    "normal",
    "aicpu_notify",
    "init_failure",
    "probe",
    "error",
]
"""The failure classes of CORRELATION.md §1.3; `init_failure` is a process's own init failure
that HCCL states in one line (its `stated` kind is the verdict); `error` is a process's first
ERROR of any module (the cause when it comes before everyone's timeouts); `probe` is HCCL's own
connection probe naming a link that failed (its source in `source_server`/`source_device`, its
destination in `remote_server`/`remote_device`): a hint, never a fault of its own."""

TIMEOUT_KINDS = frozenset({"socket", "p2p", "notify", "ffts", "rootinfo", "normal"})
"""Kinds that mean "I waited for someone": they mark victims, not causes."""


@dataclass(slots=True)
class CollectiveEvent:
    """One collective failure reported by one process, with the peer it names (if any)."""

    kind: EventKind
    process: ProcessKey
    time_us: int | None
    communicator: str | None = None
    tag: str | None = None
    op_index: int | None = None
    remote_rank: int | None = None
    remote_local: bool = False
    """The task waited on the process's own secondary stream (`remote rank:[local]`)."""
    remote_ip: str | None = None
    remote_server: str | None = None
    remote_device: int | None = None
    """Physical device id of the peer: on `remote_server`, or on the same host (p2p)."""
    link_role: str | None = None
    link_status: str | None = None
    connected_ranks: tuple[int, ...] | None = None
    """The ranks that reached the root of a root-info exchange (logged by the root)."""
    root_side: bool = False
    """The root rank itself reported this root-info timeout."""
    source_server: str | None = None
    source_device: int | None = None
    """For `probe`: the end of the link that failed to connect."""
    exception_type: str | None = None
    discoverer: str | None = None
    module: str | None = None
    codes: tuple[str, ...] = ()
    timeout_s: float | None = None
    """The timeout the line itself says fired (`timeout[120 s]`)."""
    stated: str | None = None
    """For `init_failure`: the kind of fault HCCL's line states (correlation/kinds.py)."""
    detail: str | None = None
    """For `init_failure`: what the line names (the variable, the port); for a task block: the
    op's parameters (`count 256, float32`), compared across ranks; for `cqe`: the CQE status,
    when the line states one."""
    count: int = 1
    """Lines that said the same (the same peer, tag and op) within minutes: kept once, counted."""
    last_us: int | None = None
    evidence: list[Evidence] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What was odd about the lines (a truncated block, an absurd value): lowers confidence."""

    @property
    def names_peer(self) -> bool:
        return (
            self.remote_rank is not None
            or self.remote_ip is not None
            or self.remote_device is not None
            or self.remote_local
        )


Extracted = Fact | CollectiveEvent
