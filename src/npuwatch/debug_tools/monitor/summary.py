"""What went wrong in a training run, from msprobe monitor output: `npuwatch monitor summary`.

Per data type (grad_reduced, actv …), statistic (norm, max, nans …) and rank: the steps where
msprobe's anomaly detection fired (grouped by rule), the statistics that were NaN or inf (or a
`nans` count above 0), and the spikes (`spikes`: a value far above the median of the
steps before it). Per rank: the first step where any of these happened, the last step
recorded and the latest gradient norm. Each anomaly group, NaN group and spike group is a
finding. The text rendering is `text`, the chart `plot`.

`summarise_monitor_folder` reads a folder one step-range file at a time (`digest`) and
holds no more than a file and what is carried over; `summarise_monitor` summarises a run
already loaded whole (for the chart), with the same digest, so both give the same summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.debug_tools.monitor.digest import ColumnsDiffer, TableDigest
from npuwatch.debug_tools.monitor.read import Anomaly, MonitorRun, load_monitor, read_alerts
from npuwatch.debug_tools.monitor.read_files import UNKNOWN_RANK, read_pieces, statistics_files
from npuwatch.debug_tools.monitor.spikes import SpikeSettings, StepsGoBack

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
DEFAULT_TOP = 10
PIECE_ROWS = 320_000
"""Rows digested at once from a table loaded whole: a 5,000-step file of 64 parameters."""
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
    """The summary of a run loaded whole (each table is one piece)."""
    settings = spikes or SpikeSettings()
    digests = []
    for table in run.tables:
        digest = TableDigest(table.data_type, table.rank, settings)
        for piece in _pieces(table.frame):
            digest.add(piece)
        digests.append(digest)
    return _summary(run.root, digests, run.anomalies, run.analysed, run.problems, top, settings)


def _pieces(frame: pd.DataFrame) -> Iterable[pd.DataFrame]:
    """A whole table as slices of `PIECE_ROWS` rows when its steps never go back (so the
    digest's temporaries stay the size of a file), else at once."""
    if len(frame) <= PIECE_ROWS or not frame["step"].is_monotonic_increasing:
        return [frame]
    return (frame.iloc[start : start + PIECE_ROWS] for start in range(0, len(frame), PIECE_ROWS))


def summarise_monitor_folder(
    root: Path, *, top: int = DEFAULT_TOP, spikes: SpikeSettings | None = None
) -> MonitorSummary:
    """The summary of the monitor output under `root`, read one file at a time.

    A table whose files do not continue one another (different columns, or steps that go back,
    as two folders of the same rank would give) needs all its rows at once: the run is then
    loaded whole, so the summary is the same either way.
    """
    settings = spikes or SpikeSettings()
    problems: list[str] = []
    digests: dict[tuple[str, int], TableDigest] = {}
    try:
        for piece in read_pieces(statistics_files(root), root, problems):
            key = (piece.data_type, piece.rank)
            if key not in digests:
                digests[key] = TableDigest(piece.data_type, piece.rank, settings)
            digests[key].add(piece.frame)
    except (ColumnsDiffer, StepsGoBack):
        return summarise_monitor(load_monitor(root), top=top, spikes=settings)
    alerts = read_alerts(root, problems)
    tables = [digest for _, digest in sorted(digests.items()) if digest.rows]
    return _summary(str(root), tables, alerts.anomalies, alerts.analysed, problems, top, settings)


def _summary(
    root: str,
    tables: Sequence[TableDigest],
    alerts: Sequence[Anomaly],
    analysed: Sequence[Anomaly],
    problems: Sequence[str],
    top: int,
    settings: SpikeSettings,
) -> MonitorSummary:
    anomalies = _anomaly_groups(alerts, top)
    nans = [group for table in tables for group in _nan_groups(table, top)]
    spike_groups = [group for table in tables for group in _spike_groups(table, top)]
    groups = [*anomalies, *nans, *spike_groups]
    return MonitorSummary(
        root=root,
        top=top,
        spike_ratio=settings.ratio,
        spike_window=settings.window,
        spike_ops=list(settings.ops),
        tables=[_table_info(table) for table in tables],
        anomalies=anomalies,
        nans=nans,
        spikes=spike_groups,
        ranks=_rank_states(tables, alerts, groups),
        analysed=[_analysed(anomaly) for anomaly in analysed[:top]],
        findings=[_finding(group) for group in groups],
        problems=list(problems),
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


def _nan_groups(table: TableDigest, top: int) -> list[StepGroup]:
    """One group per table: the rows with a NaN or inf statistic, or a `nans` count above 0;
    its metric names the ops concerned (`norm,max,nans`)."""
    ops = table.nan_ops
    if not ops:
        return []
    key = (table.data_type, ",".join(ops), table.rank, "NaN/inf")
    return [_group("nan", key, len(table.nan_rows), table.nan_rows, top)]


def _spike_groups(table: TableDigest, top: int) -> list[StepGroup]:
    groups = []
    for op, spikes in table.spikes():
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


def _rank_states(
    tables: Sequence[TableDigest], alerts: Sequence[Anomaly], groups: Sequence[StepGroup]
) -> list[RankState]:
    ranks = sorted({table.rank for table in tables} | {anomaly.rank for anomaly in alerts})
    states = []
    for rank in ranks:
        mine_tables = [table for table in tables if table.rank == rank]
        mine = sorted(
            (group for group in groups if group.rank == rank),
            key=lambda group: (group.first_step, group.kind != "anomaly"),
        )
        first = mine[0] if mine else None
        states.append(
            RankState(
                rank=rank,
                last_step=max(
                    (table.last_step for table in mine_tables if table.last_step is not None),
                    default=None,
                ),
                first_trouble_step=first.first_step if first else None,
                first_trouble=f"{first.rule} {first.data_type} {first.metric}" if first else "",
                **_latest_gradient(mine_tables),
            )
        )
    return states


def _latest_gradient(tables: Sequence[TableDigest]) -> dict[str, Any]:
    """The gradient norm of the last step: over all parameters, and the largest one."""
    import numpy as np  # noqa: PLC0415 - with pandas

    for data_type in GRADIENT_TYPES:
        table = next((t for t in tables if t.data_type == data_type and "norm" in t.ops), None)
        if table is None or table.latest is None:
            continue
        norms = table.latest.norms
        largest = int(np.nanargmax(np.abs(norms))) if np.isfinite(norms).any() else 0
        return {
            "grad_norm": float(np.sqrt(np.sum(norms**2))),
            "grad_norm_type": data_type,
            "grad_norm_step": table.latest.step,
            "largest_name": table.latest.names[largest],
            "largest_norm": float(norms[largest]),
        }
    return {
        "grad_norm": None,
        "grad_norm_type": "",
        "grad_norm_step": None,
        "largest_name": "",
        "largest_norm": None,
    }


def _table_info(table: TableDigest) -> TableInfo:
    return TableInfo(
        data_type=table.data_type,
        rank=table.rank,
        ops=list(table.ops),
        rows=table.rows,
        names=table.names,
        first_step=table.first_step if table.first_step is not None else 0,
        last_step=table.last_step if table.last_step is not None else 0,
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
