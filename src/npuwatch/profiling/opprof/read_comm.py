"""The communication tasks of an MC2/LCCL operator in msOpProf's trace.json, and their totals.

An MC2 operator (a matmul fused with its all-gather or reduce-scatter) moves data between ranks
while it computes; msOpProf puts each HCCL task of it in the trace as an `X` event whose `args`
say what moved: `plane id, notify id, duration estimated(us), stream id, task id, task type,
src rank, dst rank, transport type, size(Byte), data type, link type, bandwidth(GB/s)`. Some
values are written as text, so numbers are read from either. Added up per link and transport
type (`HCCS`/`SDMA`, `ROCE`/`RDMA`), they say how much crossed each link and how fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from npuwatch.parsers.table_numbers import usable_cell

_COMM_KEYS = ("size(Byte)", "transport type", "link type")


@dataclass(frozen=True)
class CommTask:
    """An HCCL task of an MC2 operator; `duration_us` is the event's, `estimated_us` msOpProf's."""

    name: str
    task_type: str
    link_type: str
    transport_type: str
    src_rank: int | None
    dst_rank: int | None
    size_bytes: float
    duration_us: float
    estimated_us: float | None
    bandwidth_gb_s: float | None
    data_type: str
    stream_id: str
    task_id: str
    plane_id: str
    notify_id: str


@dataclass(frozen=True)
class LinkTotal:
    """The communication tasks of one link and transport type (`HCCS`, `SDMA`) added up."""

    link_type: str
    transport_type: str
    tasks: int
    size_bytes: float
    time_us: float
    """All its tasks' time, notifies and waits included."""
    transfer_us: float
    """The time of the tasks that moved bytes."""

    @property
    def gb_s(self) -> float | None:
        """Bytes over the time of the tasks that moved them (a notify moves none, and would
        dilute it); bytes per µs / 1000 = GB/s."""
        return self.size_bytes / self.transfer_us / 1e3 if self.transfer_us > 0 else None


def is_comm_task(args: Mapping[str, Any]) -> bool:
    """Whether an event's `args` are those of an HCCL task."""
    return any(key in args for key in _COMM_KEYS)


def link_totals(tasks: Iterable[CommTask]) -> list[LinkTotal]:
    """The tasks per (link type, transport type), the most bytes first."""
    groups: dict[tuple[str, str], list[CommTask]] = {}
    for task in tasks:
        groups.setdefault((task.link_type, task.transport_type), []).append(task)
    totals = [
        LinkTotal(link, transport, len(same), sum(t.size_bytes for t in same),
                  sum(t.duration_us for t in same),
                  sum(t.duration_us for t in same if t.size_bytes > 0))
        for (link, transport), same in groups.items()
    ]  # fmt: skip
    return sorted(totals, key=lambda t: (-t.size_bytes, t.link_type, t.transport_type))


def comm_task(name: str, dur: float, args: Mapping[str, Any]) -> CommTask:
    def text(key: str) -> str:
        value = args.get(key)
        return "" if value is None else str(value)

    def rank(key: str) -> int | None:
        value = number(args.get(key))
        return int(value) if value is not None and abs(value) < 2.0**63 else None

    return CommTask(
        name=name,
        task_type=text("task type") or name,
        link_type=text("link type"),
        transport_type=text("transport type"),
        src_rank=rank("src rank"),
        dst_rank=rank("dst rank"),
        size_bytes=number(args.get("size(Byte)")) or 0.0,
        duration_us=dur,
        estimated_us=number(args.get("duration estimated(us)")),
        bandwidth_gb_s=number(args.get("bandwidth(GB/s)")),
        data_type=text("data type"),
        stream_id=text("stream id"),
        task_id=text("task id"),
        plane_id=text("plane id"),
        notify_id=text("notify id"),
    )


def number(value: object) -> float | None:
    """A JSON number, or a string holding one (msprof writes some args as text); else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return usable_cell(value)  # None for text, inf, and a JSON int past 64 bits
