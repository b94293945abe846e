"""What went wrong in a training run, from msprobe monitor output: `npuwatch monitor summary`.

Per data type (grad_reduced, actv …), statistic (norm, max, nans …) and rank: the steps where
msprobe's anomaly detection fired (grouped by rule), the statistics that were NaN or inf (or a
`nans` count above 0), and the spikes (monitor_spikes: a value far above the median of the
steps before it). Per rank: the first step where any of these happened, the last step
recorded and the latest gradient norm. Each anomaly group, NaN group and spike group is a
finding. The text rendering is monitor_text, the chart monitor_plot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from npuwatch.analysis.monitor_spikes import SpikeSettings, find_spikes
from npuwatch.parsers.debug_tools.monitor import (
    UNKNOWN_RANK,
    Anomaly,
    MonitorRun,
    StatisticsTable,
)

SCHEMA_VERSION = 1
DEFAULT_TOP = 10
GRADIENT_TYPES = ("grad_reduced", "grad_unreduced")
"""Where the latest gradient norm of a rank is read, in this order of preference."""


@dataclass(frozen=True)
class TableInfo:
    """One statistics table: a data type on a rank."""

    data_type: str
    rank: int
    ops: list[str]
    rows: int
    names: int
    first_step: int
    last_step: int


@dataclass(frozen=True)
class StepGroup:
    """The steps of one kind of trouble in one data type, statistic and rank."""

    kind: str
    """`anomaly` (msprobe alerts), `nan` (NaN/inf statistics) or `spike`."""
    data_type: str
    metric: str
    rank: int
    rule: str
    """The msprobe rule for anomalies; `NaN/inf` or `spike` for what npuwatch found."""
    count: int
    """Alerts, rows or spikes."""
    step_count: int
    first_step: int
    steps: list[int]
    """The first `top` steps."""
    names: list[str]
    """The first `top` parameters or modules involved."""
    largest: float | None = None
    """For spikes: the largest |value| / median ratio."""


@dataclass(frozen=True)
class RankState:
    """One rank at a glance."""

    rank: int
    last_step: int | None
    first_trouble_step: int | None
    first_trouble: str
    """What happened first (`AnomalyNan grad_reduced norm`), or empty."""
    grad_norm: float | None
    """sqrt(Σ norm²) over the parameters at the last step of grad_reduced (or unreduced)."""
    grad_norm_type: str
    grad_norm_step: int | None
    largest_name: str
    largest_norm: float | None


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str


@dataclass(frozen=True)
class MonitorSummary:
    """Everything `npuwatch monitor summary` reports."""

    root: str
    top: int
    spike_ratio: float
    spike_window: int
    spike_ops: list[str]
    tables: list[TableInfo]
    anomalies: list[StepGroup]
    nans: list[StepGroup]
    spikes: list[StepGroup]
    ranks: list[RankState]
    analysed: list[dict[str, Any]]
    """anomaly_analyse.json's top-k, as rank/step/rule/metric/tag."""
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `--json`: stable keys, NaN and inf as null."""
        return {"schema_version": SCHEMA_VERSION, **_plain(asdict(self))}


def summarise_monitor(
    run: MonitorRun, *, top: int = DEFAULT_TOP, spikes: SpikeSettings | None = None
) -> MonitorSummary:
    settings = spikes or SpikeSettings()
    anomalies = _anomaly_groups(run.anomalies, top)
    nans = [group for table in run.tables for group in _nan_groups(table, top)]
    spike_groups = [group for table in run.tables for group in _spike_groups(table, settings, top)]
    groups = [*anomalies, *nans, *spike_groups]
    return MonitorSummary(
        root=run.root,
        top=top,
        spike_ratio=settings.ratio,
        spike_window=settings.window,
        spike_ops=list(settings.ops),
        tables=[_table_info(table) for table in run.tables],
        anomalies=anomalies,
        nans=nans,
        spikes=spike_groups,
        ranks=_rank_states(run, groups),
        analysed=[_analysed(anomaly) for anomaly in run.analysed[:top]],
        findings=[_finding(group) for group in groups],
        problems=list(run.problems),
    )


def rank_label(rank: int) -> str:
    return "rank ?" if rank == UNKNOWN_RANK else f"rank {rank}"


def _anomaly_groups(anomalies: Sequence[Anomaly], top: int) -> list[StepGroup]:
    grouped: dict[tuple[str, str, int, str], list[Anomaly]] = {}
    for anomaly in anomalies:
        key = (anomaly.data_type, anomaly.metric, anomaly.rank, anomaly.rule)
        grouped.setdefault(key, []).append(anomaly)
    return [
        _group(
            "anomaly",
            key,
            len(members),
            [(member.step, member.module) for member in members],
            top,
        )
        for key, members in sorted(grouped.items(), key=lambda item: (item[0][2], item[0]))
    ]


def _nan_groups(table: StatisticsTable, top: int) -> list[StepGroup]:
    """One group per table: the rows with a NaN or inf statistic, or a `nans` count above 0;
    its metric names the ops concerned (`norm,max,nans`)."""
    import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

    frame = table.frame
    any_bad = np.zeros(len(frame), dtype=bool)
    ops = []
    for op in table.ops:
        values = frame[op].to_numpy(dtype="float64")
        bad = ~np.isfinite(values)
        if op == "nans":
            bad |= values > 0
        if bad.any():
            ops.append(op)
            any_bad |= bad
    if not ops:
        return []
    rows = frame[any_bad]
    pairs = zip(rows["step"].tolist(), map(str, rows["name"].tolist()), strict=True)
    key = (table.data_type, ",".join(ops), table.rank, "NaN/inf")
    return [_group("nan", key, int(any_bad.sum()), list(pairs), top)]


def _spike_groups(table: StatisticsTable, settings: SpikeSettings, top: int) -> list[StepGroup]:
    groups = []
    for op in (op for op in settings.ops if op in table.ops):
        spikes = find_spikes(table.frame, op, settings)
        if spikes:
            key = (table.data_type, op, table.rank, "spike")
            pairs = [(spike.step, spike.name) for spike in spikes]
            largest = max(spike.times for spike in spikes)
            groups.append(_group("spike", key, len(spikes), pairs, top, largest))
    return groups


def _group(
    kind: str,
    key: tuple[str, str, int, str],
    count: int,
    pairs: Iterable[tuple[int, str]],
    top: int,
    largest: float | None = None,
) -> StepGroup:
    data_type, metric, rank, rule = key
    listed = list(pairs)
    steps = sorted({step for step, _ in listed})
    names = list(dict.fromkeys(name for _, name in sorted(listed)))
    return StepGroup(
        kind=kind,
        data_type=data_type,
        metric=metric,
        rank=rank,
        rule=rule,
        count=count,
        step_count=len(steps),
        first_step=steps[0],
        steps=steps[:top],
        names=names[:top],
        largest=largest,
    )


def _rank_states(run: MonitorRun, groups: Sequence[StepGroup]) -> list[RankState]:
    ranks = sorted(
        {table.rank for table in run.tables} | {anomaly.rank for anomaly in run.anomalies}
    )
    states = []
    for rank in ranks:
        tables = [table for table in run.tables if table.rank == rank]
        mine = sorted(
            (group for group in groups if group.rank == rank),
            key=lambda group: (group.first_step, group.kind != "anomaly"),
        )
        first = mine[0] if mine else None
        states.append(
            RankState(
                rank=rank,
                last_step=max((int(table.frame["step"].max()) for table in tables), default=None),
                first_trouble_step=first.first_step if first else None,
                first_trouble=f"{first.rule} {first.data_type} {first.metric}" if first else "",
                **_latest_gradient(tables),
            )
        )
    return states


def _latest_gradient(tables: Sequence[StatisticsTable]) -> dict[str, Any]:
    """The gradient norm of the last step: over all parameters, and the largest one."""
    import numpy as np  # noqa: PLC0415 - with pandas

    for data_type in GRADIENT_TYPES:
        table = next((t for t in tables if t.data_type == data_type and "norm" in t.ops), None)
        if table is None:
            continue
        frame = table.frame
        step = int(frame["step"].max())
        last = frame[frame["step"] == step]
        norms = last["norm"].to_numpy(dtype="float64")
        largest = int(np.nanargmax(np.abs(norms))) if np.isfinite(norms).any() else 0
        return {
            "grad_norm": float(np.sqrt(np.sum(norms**2))),
            "grad_norm_type": data_type,
            "grad_norm_step": step,
            "largest_name": str(last["name"].iloc[largest]),
            "largest_norm": float(norms[largest]),
        }
    return {
        "grad_norm": None,
        "grad_norm_type": "",
        "grad_norm_step": None,
        "largest_name": "",
        "largest_norm": None,
    }


def _table_info(table: StatisticsTable) -> TableInfo:
    steps = table.frame["step"]
    return TableInfo(
        data_type=table.data_type,
        rank=table.rank,
        ops=list(table.ops),
        rows=len(table.frame),
        names=len(table.frame["name"].cat.categories),
        first_step=int(steps.min()),
        last_step=int(steps.max()),
    )


def _analysed(anomaly: Anomaly) -> dict[str, Any]:
    return {
        "rank": anomaly.rank,
        "step": anomaly.step,
        "rule": anomaly.rule,
        "metric": anomaly.metric,
        "data_type": anomaly.data_type,
        "module": anomaly.module,
    }


def _finding(group: StepGroup) -> Finding:
    where = f"{rank_label(group.rank)} {group.data_type} {group.metric}"
    steps = _steps_text(group)
    if group.kind == "anomaly":
        message = f"{where}: msprobe {group.rule} ×{group.count} at {steps}"
    elif group.kind == "nan":
        rows = f"{group.count} row{'s' if group.count != 1 else ''}"
        message = f"{where}: NaN/inf in {rows} at {steps}"
    else:
        spikes = f"{group.count} spike{'s' if group.count != 1 else ''}"
        largest = f"up to {group.largest or 0:.1f}× the median before"
        message = f"{where}: {spikes} ({largest}) at {steps}"
    return Finding(kind=group.kind, message=message)


def _steps_text(group: StepGroup) -> str:
    listed = ", ".join(map(str, group.steps))
    more = (
        f" and {group.step_count - len(group.steps)} more"
        if group.step_count > len(group.steps)
        else ""
    )
    return f"step{'s' if group.step_count != 1 else ''} {listed}{more}"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain(inner) for inner in value]
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value
