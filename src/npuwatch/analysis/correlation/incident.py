"""What the correlator concludes: places, incidents, and the FaultDiag code of each decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from npuwatch.parsers.hccl.model import Evidence
from npuwatch.records import format_timestamp


class Place(NamedTuple):
    """A device of the job as the logs know it; `address` alone for a peer known only by IP.
    (A named tuple: an incident names every rank that waited, tens of thousands on a large
    job.)"""

    host: str | None = None
    device: int | None = None
    """The physical device id where known, else the logic id."""
    logic_device: int | None = None
    rank: int | None = None
    communicator: str | None = None
    pid: int | None = None
    address: str | None = None
    has_logs: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "device": self.device,
            "logic_device": self.logic_device,
            "rank": self.rank,
            "communicator": self.communicator,
            "pid": self.pid,
            "address": self.address,
            "has_logs": self.has_logs,
        }

    def label(self) -> str:
        """`host-b dev 3 (rank 11)`, `10.0.0.9 (no logs)`, `rank 6 (no logs)`."""
        parts: list[str] = []
        if self.host:
            parts.append(self.host)
        if self.device is not None:
            parts.append(f"dev {self.device}")
        elif self.pid is not None:
            parts.append(f"pid {self.pid}")
        if not parts and self.address:
            parts.append(self.address)
        text = " ".join(parts)
        if self.rank is not None:
            text = f"{text} (rank {self.rank})" if text else f"rank {self.rank}"
        if not self.has_logs:
            text = f"{text} (no logs)" if text else "a device without logs"
        return text or "an unknown device"


# code: (kind, what it means, what to check first)
FAULTDIAG_CODES: dict[int, tuple[str, str, str]] = {
    101: (
        "errors_without_timeout",
        "errors on several devices and no collective timeout anywhere",
        "read the first error of each device listed; none waited for another",
    ),
    107: (
        "link_setup_timeout_spread",
        "every rank timed out setting up links, and the reports are spread over more than "
        "HCCL_CONNECT_TIMEOUT: the last rank to report started late",
        "why the last rank reached link setup late: its start, its data loading, its host",
    ),
    108: (
        "link_setup_wait",
        "ranks timed out setting up links, waiting for one another",
        "the end of the waiting chain: is its process alive, its NIC up (hccn_tool -i N -link "
        "-g), its port reachable",
    ),
    109: (
        "aicpu_notify_wait",
        "AI-CPU notify waits, in a chain",
        "the end of the chain: its device log and its host process",
    ),
    110: (
        "exec_timeout_spread",
        "every rank timed out in a collective, the reports spread over more than "
        "HCCL_EXEC_TIMEOUT: the last rank arrived late",
        "what the last rank did before the collective (slow compute, a late launch on its host)",
    ),
    111: (
        "exec_timeout_unlocated",
        "every rank timed out in a collective within HCCL_EXEC_TIMEOUT of each other and the "
        "waits do not point at one rank",
        "diff the Entry- sequences of the ranks (HCCL_ENTRY_LOG_ENABLE=1) for a diverging call",
    ),
    112: (
        "exec_timeout_missing_rank",
        "ranks timed out in a collective waiting for ranks that never reported it",
        "the silent ranks: a hang (py-spy dump, npu-smi info), a crash (dmesg, core files), or "
        "logs that were not collected",
    ),
    113: (
        "first_error_not_timeout",
        "the first failure was not a timeout; the ranks that timed out were waiting for it",
        "the first error of the root cause and the lines above it",
    ),
    116: (
        "rdma_retransmission",
        "RDMA retransmissions exceeded (ERROR CQE) on a link",
        "the link and the NIC named: hccn_tool -i N -link -g, -stat -g, optical module, switch "
        "port",
    ),
    117: (
        "init_timeout_spread",
        "every rank timed out joining the communicator, the reports spread over more than "
        "HCCL_CONNECT_TIMEOUT: the last rank started late",
        "why the last rank started late",
    ),
    118: (
        "init_root_unreachable",
        "ranks timed out joining the communicator: the root rank's host did not answer",
        "the root rank's process and host network (firewall, port, backlog, open files)",
    ),
    119: (
        "init_missing_rank",
        "some ranks timed out joining the communicator while others never reported",
        "the ranks that did not report: did they start, did they reach communicator init",
    ),
    120: (
        "tls_mismatch",
        "TLS is switched on for some devices and off for others",
        "hccn_tool -i N -tls -g on every device; make the setting the same",
    ),
    121: (
        "init_never_connected",
        "ranks never connected to the root and left no logs",
        "whether those ranks started at all (scheduler, container, node)",
    ),
    122: (
        "exec_timeout_op_index",
        "ranks timed out at different steps of the same collective: the ranks at the earliest "
        "step fell behind",
        "what the ranks at the smallest op index did before it",
    ),
    123: (
        "exec_timeout_op_tag",
        "ranks timed out in different collectives: the call order diverged",
        "the code path of the ranks at the rarest collective (a conditional collective call)",
    ),
    124: (
        "notify_deadlock",
        "the waits form a cycle (a deadlock in the operator order)",
        "diff the Entry- sequences of the ranks in the cycle",
    ),
    125: (
        "notify_own_stream",
        "a rank waited on its own secondary stream while the others waited for it",
        "the rank's own compute before the collective (an operator that never finished)",
    ),
    126: (
        "hccl_cluster_exception",
        "HCCL's own heartbeat named the device",
        "the device named: its process (exited?), its network, npu-smi info",
    ),
    132: (
        "transport_init_chain",
        "transport setup failed along a waiting chain",
        "the end of the chain: its process, its NIC and the port range",
    ),
    133: (
        "transport_init_unlocated",
        "transport setup failed and no chain resolves",
        "the devices that did not print 'Transport init error'",
    ),
}


@dataclass
class Incident:
    """One fault: where it started, who waited, and why npuwatch thinks so."""

    faultdiag_code: int
    summary: str
    communicator: str | None
    root_cause: list[Place]
    waiting_chain: list[Place]
    victims: list[Place]
    unheard: list[Place]
    evidence: list[Evidence]
    confidence: float
    first_us: int | None = None
    notes: list[str] = field(default_factory=list)
    recovered: bool = False
    last_us: int | None = None
    """The time of the latest report of the fault."""
    settle_us: int | None = None
    """By when every report the fault will get has come: its first report plus the timeout
    of its failure class and a grace (CORRELATION.md §2). Before, a live verdict is
    provisional, unless every rank reported."""
    ranks_expected: int | None = None
    """The rank count of the fault's communicator, when known."""
    ranks_reported: int = 0
    """The processes that reported the fault."""
    status: str | None = None
    """How a live incident stands (`provisional`, `closed: quiet` …), for its report."""
    victims_counted: tuple[int, dict[str, int]] | None = None
    """The victims' count and their count by host, when `victims` lists only the first ones
    (an incident read back from the search engine)."""

    @property
    def victim_count(self) -> int:
        return self.victims_counted[0] if self.victims_counted else len(self.victims)

    def settled(self, now_us: int) -> bool:
        """Whether the verdict can be taken as final at `now_us` (the settle rule)."""
        if self.ranks_expected is not None and self.ranks_reported >= self.ranks_expected:
            return True
        return self.settle_us is not None and now_us >= self.settle_us

    @property
    def kind(self) -> str:
        return FAULTDIAG_CODES[self.faultdiag_code][0]

    @property
    def check_first(self) -> str:
        return FAULTDIAG_CODES[self.faultdiag_code][2]

    def victims_by_host(self) -> dict[str, int]:
        if self.victims_counted is not None:
            return dict(self.victims_counted[1])
        counts: dict[str, int] = {}
        for place in self.victims:
            host = place.host or "-"
            counts[host] = counts.get(host, 0) + 1
        return dict(sorted(counts.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "faultdiag_code": self.faultdiag_code,
            "summary": self.summary,
            "communicator": self.communicator,
            "root_cause": [place.to_dict() for place in self.root_cause],
            "waiting_chain": [place.to_dict() for place in self.waiting_chain],
            "victims": [place.to_dict() for place in self.victims],
            "unheard": [place.to_dict() for place in self.unheard],
            "evidence": [item.to_dict() for item in self.evidence],
            "confidence": round(self.confidence, 2),
            "first": None if self.first_us is None else format_timestamp(self.first_us),
            "recovered": self.recovered,
            "check_first": self.check_first,
            "notes": self.notes,
        }
