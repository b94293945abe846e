"""How far each host's clock is off, estimated from communicator init.

CANN stamps lines with the host's local time and no zone; FaultDiag orders hosts by comparing
those strings (CORRELATION.md §3 item 6), so a host whose clock is an hour behind looks an hour
"first". The end of a communicator's init is a rendezvous: every member finishes it within
moments of the others. The latest line each member printed after the root-info exchange
completed (never an init entry, which members may reach minutes apart: CORRELATION.md §5.8),
per communicator, against the median of all members gives a host's offset; hosts whose
offset is beyond the threshold are corrected, and the incident says so.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median_low

from npuwatch.correlation.processes import ProcessView
from npuwatch.parsers.hccl.model import ProcessKey

SKEW_THRESHOLD_US = 10_000_000
"""Smaller offsets are left alone: init spreads over a few seconds on large jobs."""


def host_offsets(views: dict[ProcessKey, ProcessView]) -> dict[str, int]:
    """Offset to subtract from each host's times (µs); only hosts beyond the threshold."""
    joined: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for key, view in views.items():
        for name, membership in view.memberships.items():
            if name is not None and membership.rendezvous_us is not None:
                joined[name].append((key.host, membership.rendezvous_us))
    deltas: dict[str, list[int]] = defaultdict(list)
    for members in joined.values():
        if len({host for host, _ in members}) < 2:
            continue
        middle = median_low(time for _, time in members)
        for host, time in members:
            deltas[host].append(time - middle)
    if not deltas:
        return {}
    offsets = {host: median_low(values) for host, values in deltas.items()}
    reference = median_low(offsets.values())
    return {
        host: offset - reference
        for host, offset in offsets.items()
        if abs(offset - reference) >= SKEW_THRESHOLD_US
    }


def describe_offset(host: str, offset_us: int) -> str:
    seconds = abs(offset_us) / 1e6
    direction = "ahead of" if offset_us > 0 else "behind"
    return (
        f"the clock of {host or 'a host'} is about {seconds:,.0f} s {direction} the others "
        "(from communicator init); its times are corrected in this verdict"
    )
