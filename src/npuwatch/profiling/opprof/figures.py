"""The key figures of one msOpProf operator launch, from its metric CSVs.

Every ratio of the CSVs is per core (a row per block and sub-block), and cores run for different
times, so a figure of the launch is the mean of its rows weighted by each row's core time
(`aic_time(us)` for cube-core columns, `aiv_time(us)` for vector-core ones); that is the share
of all core time, as if the pipe times were added up and divided by the core times.

- **Pipe shares** (PipeUtilization): each pipe's busy share of core time, for cube, vector,
  scalar, mte1 (L1→L0A/B), mte2 (GM→core), mte3 (core→GM) and fixpipe (L0C→GM/L1).
- **Bound**: the pipe with the largest share, when it is busy at least BOUND_MIN_SHARE of the
  time: compute-bound (cube, vector), memory-bound (MTE1/MTE2/MTE3/FIXPIPE), scalar-bound. Below
  that no pipe limits the kernel: it waits (synchronisation, launch, latency).
- **AI Core utilisation**: the share of the busier compute pipe, cube or vector.
- **Memory bandwidth** (Memory): the most used channel's `*_bw_usage_rate(%)`, and the
  main-memory read+write GB/s of all cores added up (they run at the same time).
- **Copy share**: MTE1+MTE2+MTE3 busy time over core time, at most 100% per core (the three
  pipes overlap).
- **L2 hit rate** (L2Cache): hits over hits and misses of all cores' counters, else the mean of
  the rates the CSV gives (310P); **conflicts** (ResourceConflictRatio): the largest
  `*_cflt_ratio` and `*_wait_ratio` (share of cycles blocked).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from npuwatch.profiling.opprof.read import OpLaunch
from npuwatch.profiling.opprof.read_metrics import BlockRow, MetricTable

BOUND_MIN_SHARE = 0.3
"""A pipe busy less than this share of core time does not bound the kernel."""
PIPES = ("cube", "vector", "scalar", "mte1", "mte2", "mte3", "fixpipe")
COPY_PIPES = ("mte1", "mte2", "mte3")
_PIPE_COLUMN = {"vector": "vec"}
_CORES = ("aic", "aiv")
CONFLICTS_SHOWN = 3


@dataclass(frozen=True)
class Share:
    """A named part (a pipe, a channel, a conflict kind) and its percentage."""

    name: str
    pct: float


@dataclass(frozen=True)
class KeyFigures:
    """What the metric CSVs of one launch say; None where the CSV is missing or says nothing."""

    pipes: list[Share]
    """Busy share of each pipe present, the busiest first."""
    bound: str | None
    """The bounding pipe (`mte2`, `cube` …), None when none is busy BOUND_MIN_SHARE."""
    bound_label: str
    core_utilisation_pct: float | None
    core_utilisation_pipe: str | None
    copy_share_pct: float | None
    bandwidth_usage_pct: float | None
    bandwidth_channel: str | None
    main_memory_gb_s: float | None
    l2_hit_rate_pct: float | None
    conflicts: list[Share]


def key_figures(launch: OpLaunch) -> KeyFigures:
    pipe_rows = _rows(launch, "PipeUtilization")
    pipes = sorted(
        (
            Share(pipe, 100 * share)
            for pipe in PIPES
            if (share := _pipe_share(pipe_rows, pipe)) is not None
        ),
        key=lambda share: -share.pct,
    )
    busiest = pipes[0] if pipes else None
    bound = busiest.name if busiest and busiest.pct >= 100 * BOUND_MIN_SHARE else None
    compute = [share for share in pipes if share.name in ("cube", "vector")]
    channel = _busiest_channel(_rows(launch, "Memory"))
    return KeyFigures(
        pipes=pipes,
        bound=bound,
        bound_label=_bound_label(bound, busiest),
        core_utilisation_pct=compute[0].pct if compute else None,
        core_utilisation_pipe=compute[0].name if compute else None,
        copy_share_pct=_copy_share(pipe_rows),
        bandwidth_usage_pct=channel.pct if channel else None,
        bandwidth_channel=channel.name if channel else None,
        main_memory_gb_s=_main_memory(_rows(launch, "Memory")),
        l2_hit_rate_pct=_l2_hit_rate(_rows(launch, "L2Cache")),
        conflicts=_conflicts(_rows(launch, "ResourceConflictRatio")),
    )


def _rows(launch: OpLaunch, metric: str) -> Sequence[BlockRow]:
    table: MetricTable | None = launch.metrics.get(metric)
    return table.rows if table else ()


def _weight(row: BlockRow, column: str) -> float:
    """The core time a row's `column` is a share of: its core's time, 1 when not written."""
    core = column[:3] if column[:4] in ("aic_", "aiv_") else None
    times = [f"{core}_time(us)"] if core else [f"{name}_time(us)" for name in _CORES]
    return next((row.values[time] for time in times if time in row.values), 1.0)


def _weighted_mean(pairs: Iterable[tuple[float, float]]) -> float | None:
    """The mean of (value, weight) pairs; None for none (or no weight at all)."""
    total = weight = 0.0
    for value, share in pairs:
        total += value * share
        weight += share
    return total / weight if weight > 0 else None


def _column_mean(rows: Sequence[BlockRow], column: str) -> float | None:
    return _weighted_mean(
        (row.values[column], _weight(row, column)) for row in rows if column in row.values
    )


def _pipe_share(rows: Sequence[BlockRow], pipe: str) -> float | None:
    """The time-weighted ratio of `pipe` over every core that has it (cube and vector cores)."""
    name = _PIPE_COLUMN.get(pipe, pipe)
    columns = [f"{core}_{name}_ratio" for core in _CORES]
    return _weighted_mean(
        (row.values[column], _weight(row, column))
        for row in rows
        for column in columns
        if column in row.values
    )


def _copy_share(rows: Sequence[BlockRow]) -> float | None:
    pairs = []
    for row in rows:
        for core in _CORES:
            ratios = [row.values.get(f"{core}_{pipe}_ratio") for pipe in COPY_PIPES]
            present = [ratio for ratio in ratios if ratio is not None]
            if present:
                pairs.append((min(1.0, sum(present)), _weight(row, f"{core}_time(us)")))
    share = _weighted_mean(pairs)
    return None if share is None else 100 * share


def _bound_label(bound: str | None, busiest: Share | None) -> str:
    if busiest is None:
        return "unknown (no PipeUtilization)"
    if bound is None:
        return (
            f"latency-bound (no pipe busy {100 * BOUND_MIN_SHARE:.0f}% of the time; "
            f"busiest {busiest.name} {busiest.pct:.1f}%)"
        )
    if bound in ("cube", "vector"):
        return f"compute-bound ({bound})"
    if bound == "scalar":
        return "scalar-bound"
    return f"memory-bound ({bound.upper()})"


def _busiest_channel(rows: Sequence[BlockRow]) -> Share | None:
    columns = {column for row in rows for column in row.values if "_bw_usage_rate(%)" in column}
    shares = [
        Share(column.split("_bw_usage_rate(%)")[0], mean)
        for column in sorted(columns)
        if (mean := _column_mean(rows, column)) is not None
    ]
    return max(shares, key=lambda share: share.pct, default=None)


def _main_memory(rows: Sequence[BlockRow]) -> float | None:
    columns = [f"{core}_main_mem_{way}_bw(GB/s)" for core in _CORES for way in ("read", "write")]
    values = [row.values[column] for row in rows for column in columns if column in row.values]
    return sum(values) if values else None


def _l2_hit_rate(rows: Sequence[BlockRow]) -> float | None:
    hits = misses = 0.0
    for row in rows:
        for column, value in row.values.items():
            if column.endswith("_hit"):
                hits += value
            elif column.endswith(("_miss", "_miss_allocate")):
                misses += value
    if hits + misses > 0:
        return 100 * hits / (hits + misses)
    rates = sorted(
        {
            c
            for row in rows
            for c in row.values
            if c.endswith(("total_hit_rate(%)", "l2_cache_hit_rate(%)"))
        }
    )
    means = [mean for column in rates if (mean := _column_mean(rows, column)) is not None]
    return sum(means) / len(means) if means else None


def _conflicts(rows: Sequence[BlockRow]) -> list[Share]:
    columns = sorted(
        {
            column
            for row in rows
            for column in row.values
            if column.endswith(("_cflt_ratio", "_wait_ratio"))
            and not column.endswith("_total_cflt_ratio")
        }
    )
    shares = [
        Share(column.removesuffix("_ratio"), 100 * mean)
        for column in columns
        if (mean := _column_mean(rows, column))
    ]
    shares.sort(key=lambda share: -share.pct)
    return shares[:CONFLICTS_SHOWN]
