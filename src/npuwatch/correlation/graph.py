"""The waits-for graph of one failure class in one communicator, and the walks over it.

A node is a process (ProcessKey) or a place known only from a peer's line (a Place without
logs). An edge goes from a process to the peer its failure line says it waited for. The walks
follow CORRELATION.md §1.5, with its step caps, and deterministic tie-breaks where FaultDiag
depends on hash order or string order (§3 item 11): edges in time order, nodes by first report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npuwatch.correlation.incident import Place
from npuwatch.parsers.hccl.model import ProcessKey

Node = ProcessKey | Place
_STEP_CAP = 100_000


@dataclass
class WaitGraph:
    edges: dict[Node, list[Node]] = field(default_factory=dict)
    """Out-edges in the order they were reported (earliest first)."""
    waits_on_itself: list[ProcessKey] = field(default_factory=list)

    def add(self, source: ProcessKey, target: Node) -> None:
        targets = self.edges.setdefault(source, [])
        if target != source and target not in targets:
            targets.append(target)

    def in_degree(self) -> dict[Node, int]:
        degree: dict[Node, int] = {}
        for targets in self.edges.values():
            for target in targets:
                degree[target] = degree.get(target, 0) + 1
        return degree

    def waiters_of(self, node: Node) -> list[Node]:
        return [source for source, targets in self.edges.items() if node in targets]


@dataclass
class Walk:
    chain: list[Node]
    roots: list[Node]
    cycle: bool


def walk(graph: WaitGraph, start: Node) -> Walk:
    """Follow the first edge of each node from `start`: the end of the chain is the root; a
    node met again closes a cycle whose members are the roots; a place without logs ends it."""
    chain: list[Node] = [start]
    seen = {start: 0}
    node = start
    for _ in range(_STEP_CAP):
        targets = graph.edges.get(node) if isinstance(node, ProcessKey) else None
        if not targets:
            return Walk(chain, [node], cycle=False)
        following = targets[0]
        if following in seen:
            cycle = chain[seen[following] :]
            return Walk([*chain, following], list(cycle), cycle=True)
        seen[following] = len(chain)
        chain.append(following)
        node = following
    return Walk(chain, [node], cycle=False)


def chain_start(graph: WaitGraph, order: list[ProcessKey]) -> Node:
    """Where a walk starts (CORRELATION.md §5.9): a node that waits and that nobody waits on,
    the one whose walk is longest, ties broken by the earliest report (`order`: the reporters,
    earliest first); the first reporter when every waiter is waited on (a cycle)."""
    degree = graph.in_degree()
    starts = [node for node in order if graph.edges.get(node) and not degree.get(node)]
    if not starts:
        return order[0]
    lengths = {node: len(walk(graph, node).chain) for node in starts[:64]}
    return max(lengths, key=lambda node: (lengths[node], -order.index(node)))


def reverse_chain(graph: WaitGraph, end: Node) -> list[Node]:
    """A chain that ends at `end`: from a node that waits, step by step, on it."""
    chain = [end]
    seen = {end}
    node = end
    for _ in range(_STEP_CAP):
        waiters = [w for w in graph.waiters_of(node) if w not in seen]
        if not waiters:
            break
        node = waiters[0]
        seen.add(node)
        chain.append(node)
    return list(reversed(chain))
