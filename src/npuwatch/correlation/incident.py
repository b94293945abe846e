"""What the correlator concludes: places, incidents, and the FaultDiag code of each decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from npuwatch.correlation.kinds import KINDS
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
        elif self.address and self.device is not None:  # a server known only by its address
            parts.append(self.address)
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


@dataclass
class Incident:
    """One fault: where it started, who waited, and why npuwatch thinks so."""

    kind: str
    """A name of kinds.py."""
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

    def settled(self, now_us: int, since_us: int | None = None) -> bool:
        """Whether the verdict can be taken as final at `now_us` (the settle rule). `since_us`:
        when its settle span (first report to settle time) is counted from; by default the
        first report's time in the logs, which the live correlator replaces by its first
        verdict on its own clock (a backfill's logs, or a host's wrong clock, are days back)."""
        if self.ranks_expected is not None and self.ranks_reported >= self.ranks_expected:
            return True
        if self.settle_us is None:
            return False
        if since_us is None or self.first_us is None:
            return now_us >= self.settle_us
        return now_us >= since_us + (self.settle_us - self.first_us)

    @property
    def faultdiag_code(self) -> int | None:
        """FaultDiag's code for this kind; None for the kinds FaultDiag does not decide."""
        return KINDS[self.kind].faultdiag_code

    @property
    def check_first(self) -> str:
        return KINDS[self.kind].check_first

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
