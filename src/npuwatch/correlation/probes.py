"""HCCL's own connection probe, a hint (formats/hccl-init-and-link.md §1.2).

With HCCL_DFS_CONFIG's connection_fault_detection_time set (20 s by default), HCCL probes the
links that did not come up and prints `CONNECT TIMEOUT DETECT RESULT` with the link it found
broken: srcRank failed to connect to destRank. HCCL itself says the result "may not represent
the actual fault site in some complex scenarios", so it never overrides a verdict the other
lines support: it names the link only when they name nobody, and is said beside any other
verdict, with whether the root cause is an end of it.
"""

from __future__ import annotations

from npuwatch.correlation.fault import Fault, Finding
from npuwatch.correlation.graph import Node
from npuwatch.correlation.prepare import Ev

_LOCATES_NOTHING = frozenset({"weak_timeout_unlocated", "transport_init_unlocated"})
"""Link-setup verdicts that name nobody: HCCL's connection probe, where it ran, names the link."""


def probed(fault: Fault, finding: Finding, probes: list[Ev]) -> Finding:
    """HCCL's connection probe, a hint (formats/hccl-init-and-link.md §1.2): it names the link
    when the verdict names nobody, and is said beside any other verdict, with whether the
    verdict's root cause is an end of it."""
    links: list[tuple[Node, Node]] = []
    unheard = dict(fault.unheard)  # a hint's places are no one's "no logs" unless it decides
    for ev in probes:
        event = ev.event
        source = fault.at_server(event.source_server or "", event.source_device)
        target = fault.target(ev)
        if target is not None and (source, target) not in links:
            links.append((source, target))
    if not links:
        return finding
    shown = "; ".join(
        f"{fault.place(a).label()} failed to connect to {fault.place(b).label()}" for a, b in links
    )
    if finding.kind in _LOCATES_NOTHING and len(links) == 1:
        fault.evs = sorted([*fault.evs, *probes], key=lambda e: (e.time_us or 0, e.process))
        return Finding(
            "link_network",
            list(links[0]),
            [],
            f"HCCL's own connection probe says {shown}; the other lines name nobody",
        )
    fault.unheard = unheard
    ends = {node for link in links for node in link}
    agrees = any(root in ends for root in finding.roots)
    fault.notes.append(
        f"HCCL's connection probe: {shown}"
        + ("" if agrees or not finding.roots else " (not an end of the root cause named here)")
    )
    return finding
