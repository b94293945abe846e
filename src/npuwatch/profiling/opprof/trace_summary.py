"""What a launch's trace.json and visualize_data.bin add to its msOpProf summary.

- **msOpProf's advice**: the `advice[]` of the OpBasicInfo block of visualize_data.bin, as is.
- **Communication** (MC2/LCCL operators): the HCCL tasks of the trace added up, and per link
  and transport type; the bandwidth is bytes over the time of the tasks that moved bytes.
- **Block spread**: the span of the slowest block against the fastest. Blocks that should do
  the same work and do not end together mean the work is split unevenly (or one block waits on
  its data): at IMBALANCE_PCT or more it is named a load imbalance. A hint, not a finding: a
  kernel may give its last block less on purpose.
- **Pipes** (simulator): each pipe's busy time, the union of its instructions, summed over
  the simulated cores.

The launch's own trace.json is read first, else the Trace block of its visualize_data.bin;
a simulator's per-core traces repeat the all-core one and add nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npuwatch.profiling.opprof.read import OpLaunch
from npuwatch.profiling.opprof.read_trace import OpTrace

IMBALANCE_PCT = 10.0
"""A slowest block this much longer than the fastest is named a load imbalance."""


@dataclass(frozen=True)
class LinkReport:
    """The communication tasks of one link and transport type (`HCCS` over `SDMA`)."""

    link_type: str
    transport_type: str
    tasks: int
    size_bytes: float
    time_us: float
    transfer_us: float
    """The time of the tasks that moved bytes: gb_s is size_bytes over it."""
    gb_s: float | None


@dataclass(frozen=True)
class Communication:
    """Every HCCL task of the launch, and the same per link."""

    tasks: int
    size_bytes: float
    time_us: float
    transfer_us: float
    gb_s: float | None
    links: list[LinkReport]


@dataclass(frozen=True)
class BlockSpread:
    """The fastest and the slowest block (µs from its first start to its last end)."""

    blocks: int
    fastest: str
    fastest_us: float
    slowest: str
    slowest_us: float
    spread_pct: float | None
    """How much longer the slowest block ran than the fastest; None when the fastest took 0."""
    imbalanced: bool


@dataclass(frozen=True)
class PipeTime:
    """One pipe of a simulator run: its busy time and instructions over all cores."""

    pipe: str
    busy_us: float
    instructions: int
    cores: int


@dataclass(frozen=True)
class TraceFigures:
    """What the trace and visualize_data.bin of one launch say; empty when it has neither."""

    advice: list[str] = field(default_factory=list)
    visualize_blocks: list[str] = field(default_factory=list)
    """The kinds of block in visualize_data.bin (OpBasicInfo, Trace, Code …)."""
    communication: Communication | None = None
    block_spread: BlockSpread | None = None
    trace_pipes: list[PipeTime] = field(default_factory=list)


def trace_figures(launch: OpLaunch) -> TraceFigures:
    visualize = launch.visualize
    trace = launch.trace or (visualize.trace if visualize else None)
    basic = visualize.basic if visualize else None
    return TraceFigures(
        advice=list(basic.advice) if basic else [],
        visualize_blocks=visualize.kinds() if visualize else [],
        communication=_communication(trace) if trace else None,
        block_spread=_block_spread(trace) if trace else None,
        trace_pipes=_pipes(trace) if trace else [],
    )


def _communication(trace: OpTrace) -> Communication | None:
    if not trace.comm_tasks:
        return None
    links = trace.links()
    size = sum(link.size_bytes for link in links)
    transfer = sum(link.transfer_us for link in links)
    return Communication(
        tasks=len(trace.comm_tasks),
        size_bytes=size,
        time_us=sum(link.time_us for link in links),
        transfer_us=transfer,
        gb_s=size / transfer / 1e3 if transfer > 0 else None,
        links=[
            LinkReport(link.link_type, link.transport_type, link.tasks, link.size_bytes,
                       link.time_us, link.transfer_us, link.gb_s)
            for link in links
        ],
    )  # fmt: skip


def _block_spread(trace: OpTrace) -> BlockSpread | None:
    if len(trace.blocks) < 2:
        return None
    fastest = min(trace.blocks, key=lambda block: block.span_us)
    slowest = max(trace.blocks, key=lambda block: block.span_us)
    spread = 100 * (slowest.span_us / fastest.span_us - 1) if fastest.span_us > 0 else None
    return BlockSpread(
        blocks=len(trace.blocks),
        fastest=_block_name(fastest.block, fastest.lane),
        fastest_us=fastest.span_us,
        slowest=_block_name(slowest.block, slowest.lane),
        slowest_us=slowest.span_us,
        spread_pct=spread,
        imbalanced=spread is None or spread >= IMBALANCE_PCT,
    )


def _block_name(block: str, lane: str) -> str:
    return f"{block} ({lane})" if lane else block


def _pipes(trace: OpTrace) -> list[PipeTime]:
    merged: dict[str, list[tuple[float, int]]] = {}
    for pipe in trace.pipes:
        merged.setdefault(pipe.pipe, []).append((pipe.busy_us, pipe.instructions))
    times = [
        PipeTime(pipe, sum(busy for busy, _ in cores), sum(n for _, n in cores), len(cores))
        for pipe, cores in merged.items()
    ]
    return sorted(times, key=lambda time: (-time.busy_us, time.pipe))
