"""What the extractor keeps per process between records: open blocks, and the events sent.

An event that repeats (the same peer, tag and op within minutes) is counted on the one already
sent rather than sent again; past the cap, events are counted, not kept (bounded memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as default
from typing import Any

from npuwatch.parsers.hccl.model import CollectiveEvent, ProcessKey

SAME_FAILURE_US = 600_000_000
"""The same failure again within this time is counted on the event already kept; later, it is
an event of its own (it may belong to another life of the process: a restart, a recovery)."""


@dataclass
class ProcessState:
    key: ProcessKey
    key_info_communicator: str | None = None
    init_communicator: str | None = None
    pending_root: bool = False
    errors_at: list[int] = default(default_factory=list)
    """Times of the ERROR records sent as `error` events: the first of each burst."""
    blocks: dict[int, CollectiveEvent] = default(default_factory=dict)
    rootinfo: CollectiveEvent | None = None
    aicpu_waiting: CollectiveEvent | None = None
    connected: list[int] = default(default_factory=list)
    """The ranks the open root-info event's list named so far."""
    stated_open: CollectiveEvent | None = None
    """A stated init failure waiting for the next ERROR line, which may name its communicator."""
    kept: dict[tuple[Any, ...], CollectiveEvent] = default(default_factory=dict)
    emitted: int = 0
    dropped: int = 0

    def keep(self, event: CollectiveEvent, cap: int) -> bool:
        """Whether the event is new and is to be sent (else it was counted or dropped)."""
        key = (
            event.kind,
            event.communicator,
            event.tag,
            event.op_index,
            event.remote_rank,
            event.remote_local,
            event.remote_ip,
            event.remote_server,
            event.remote_device,
        )
        kept = self.kept.get(key)
        if kept is not None and _close_in_time(kept, event):
            kept.count += 1
            if event.time_us is not None:
                kept.last_us = max(kept.last_us or event.time_us, event.time_us)
            return False
        if self.emitted >= cap:
            self.dropped += 1
            return False
        self.kept[key] = event
        self.emitted += 1
        return True

    def settle_connected(self) -> None:
        """The connected ranks listed so far, onto the open root-info event."""
        if self.rootinfo is not None and self.connected:
            self.rootinfo.connected_ranks = tuple(self.connected)
        self.connected = []

    def close_blocks(self) -> list[CollectiveEvent]:
        """Every event still being put together, as it is (the input ended)."""
        closed: list[CollectiveEvent] = []
        for event in self.blocks.values():
            if len(event.evidence) == 1 and event.kind == "notify":
                event.problems.append(
                    f"the task-exception block of pid {self.key.pid} at "
                    f"{event.evidence[0].file}:{event.evidence[0].line} ends after its first "
                    "line (no para or groupRank line): its peer is not known"
                )
            closed.append(event)
        self.blocks.clear()
        self.settle_connected()
        for waiting in (self.rootinfo, self.aicpu_waiting, self.stated_open):
            if waiting is not None:
                closed.append(waiting)
        self.rootinfo = None
        self.aicpu_waiting = None
        self.stated_open = None
        return closed


def _close_in_time(kept: CollectiveEvent, event: CollectiveEvent) -> bool:
    if kept.time_us is None or event.time_us is None:
        return True
    latest = kept.last_us if kept.last_us is not None else kept.time_us
    return kept.time_us - SAME_FAILURE_US <= event.time_us <= latest + SAME_FAILURE_US
