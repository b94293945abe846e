"""Where the device time of a profile goes, and which rank is slow: `npuwatch profile summary`.

For one run or several ranks together: the operators with the most total time and the most
launches, the split by operator type and by core (AI Core, AI Vector Core, AI CPU, MIX, HCCL
...), the share of host↔device copies, and the step time of each rank with its spread
(`steps`, where the slow-rank finding is made). All durations are µs; the text rendering
is `text`, the chart `plot`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.operators import combine_operator_tables, operator_table
from npuwatch.profiling.msprof.run import ProfileRun
from npuwatch.profiling.msprof.values import plain_value
from npuwatch.profiling.steps import (
    Finding,
    RankSteps,
    StepSpread,
    rank_steps,
    slow_rank_findings,
    step_spread,
)

SCHEMA_VERSION = 1
DEFAULT_TOP = 10
COPY_PATTERN = re.compile(r"memcpy|h2d|d2h|host_?to_?device|device_?to_?host", re.IGNORECASE)
COPIES_COUNTED = (
    "device tasks whose op name, op type or task type contains memcpy, H2D, D2H, HostToDevice "
    "or DeviceToHost (a MEMCPY_ASYNC task type, a MemcpyAsync op; device-to-device copies "
    "named that way are included too), as a share of all kernel time; and "
    "host API calls of api_statistic with such a name (aclrtMemcpy, aclrtMemcpyAsync ...), "
    "whose time is spent on the host, so it is given apart and not as a share"
)


@dataclass(frozen=True)
class OperatorRow:
    """One line of `operator_table`, with its share of all kernel time."""

    op_name: str
    op_type: str
    task_type: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    max_us: float
    share_pct: float


@dataclass(frozen=True)
class Share:
    """A group of kernels (an op type, a core type, a kind of copy) and its share of time."""

    name: str
    count: int
    total_us: float
    share_pct: float | None


@dataclass(frozen=True)
class Copies:
    """Host↔device copies: device tasks, and host API calls (see COPIES_COUNTED)."""

    count: int
    total_us: float
    share_pct: float
    tasks: list[Share]
    host_api_count: int
    host_api_total_us: float
    host_apis: list[Share]
    counted: str = COPIES_COUNTED


@dataclass(frozen=True)
class RunInfo:
    """One run of the summary: where it was read, what it is, how much was found in it."""

    label: str
    source: str
    layout: str
    complete: bool
    rank: int | None
    device_id: int | None
    cann_version: str | None
    torch_npu_version: str | None
    kernels: int
    operator_source: str
    """`kernels`, `op_statistic` (no kernels: the statistic per op type), or `none`."""
    problems: int


@dataclass(frozen=True)
class ProfileSummary:
    """Everything `npuwatch profile summary` reports; operators of all runs added together."""

    root: str
    top: int
    runs: list[RunInfo]
    kernel_time_us: float
    kernel_count: int
    by_time: list[OperatorRow]
    by_count: list[OperatorRow]
    op_types: list[Share]
    core_types: list[Share]
    copies: Copies
    steps: list[RankSteps]
    spread: StepSpread | None
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `--json`: stable keys, durations in µs (fields end in _us)."""
        document = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        return {key: _rounded(value) for key, value in document.items()}


def summarise_profiles(
    runs: Sequence[ProfileRun], *, root: str, top: int = DEFAULT_TOP
) -> ProfileSummary:
    """The summary of `runs` (one per rank or device) read from `root`."""
    tables = [operator_table(run) for run in runs]
    operators = combine_operator_tables(tables)
    total = float(operators[c.TOTAL_US].sum())
    by_count = operators.sort_values(
        [c.COUNT, c.TOTAL_US], ascending=[False, False], kind="mergesort"
    )
    labels = _labels(runs)
    by_layout: dict[str, list[RankSteps]] = {}
    for run, label in zip(runs, labels, strict=True):
        rank = rank_steps(run, label)
        if rank is not None:
            by_layout.setdefault(run.layout, []).append(rank)
    steps = [rank for ranks in by_layout.values() for rank in ranks]
    # A torch_npu step and an msprof iteration are not the same measure: ranks are compared
    # within the layout most of them share.
    spread = step_spread(max(by_layout.values(), key=len)) if by_layout else None
    return ProfileSummary(
        root=root,
        top=top,
        runs=[
            _run_info(run, label, table)
            for run, label, table in zip(runs, labels, tables, strict=True)
        ],
        kernel_time_us=total,
        kernel_count=int(operators[c.COUNT].sum()),
        by_time=_operator_rows(operators.head(top), total),
        by_count=_operator_rows(by_count.head(top), total),
        op_types=_shares(operators, c.OP_TYPE, total),
        core_types=_shares(operators, c.TASK_TYPE, total),
        copies=_copies(operators, runs, total),
        steps=steps,
        spread=spread,
        findings=slow_rank_findings(steps, spread),
        problems=[problem for run in runs for problem in run.problems],
    )


def _labels(runs: Sequence[ProfileRun]) -> list[str]:
    """Each run's label, with its folder name when two runs would have the same one."""
    labels = [run.label for run in runs]
    return [
        f"{label} ({run.source.name})" if labels.count(label) > 1 else label
        for run, label in zip(runs, labels, strict=True)
    ]


def _run_info(run: ProfileRun, label: str, table: pd.DataFrame) -> RunInfo:
    if not run.kernels.empty:
        source = "kernels"
    elif not table.empty:
        source = "op_statistic"
    else:
        source = "none"
    return RunInfo(
        label=label,
        source=str(run.source),
        layout=run.layout,
        complete=run.complete,
        rank=run.rank,
        device_id=run.device_id,
        cann_version=run.cann_version,
        torch_npu_version=run.torch_npu_version,
        kernels=len(run.kernels),
        operator_source=source,
        problems=len(run.problems),
    )


def _operator_rows(table: pd.DataFrame, total: float) -> list[OperatorRow]:
    return [
        OperatorRow(
            op_name=str(row[c.OP_NAME]),
            op_type=str(row[c.OP_TYPE]),
            task_type=str(row[c.TASK_TYPE]),
            count=int(row[c.COUNT]),
            total_us=float(row[c.TOTAL_US]),
            avg_us=float(row[c.AVG_US]),
            min_us=float(row[c.MIN_US]),
            max_us=float(row[c.MAX_US]),
            share_pct=_percent(float(row[c.TOTAL_US]), total),
        )
        for _, row in table.iterrows()
    ]


def _shares(operators: pd.DataFrame, key: str, total: float) -> list[Share]:
    grouped = operators.groupby(key, sort=False).agg(
        count=(c.COUNT, "sum"), total_us=(c.TOTAL_US, "sum")
    )
    grouped = grouped.reset_index().sort_values(
        ["total_us", key], ascending=[False, True], kind="mergesort"
    )
    return [
        Share(str(name), int(count), float(spent), _percent(float(spent), total))
        for name, count, spent in grouped[[key, "count", "total_us"]].itertuples(index=False)
    ]


def _copies(operators: pd.DataFrame, runs: Sequence[ProfileRun], total: float) -> Copies:
    text = operators[c.OP_NAME] + " " + operators[c.OP_TYPE] + " " + operators[c.TASK_TYPE]
    copies = operators[text.str.contains(COPY_PATTERN)].copy()
    copies["kind"] = copies[c.OP_TYPE] + " (" + copies[c.TASK_TYPE] + ")"
    tasks = _shares(copies, "kind", total)
    apis = pd.concat(
        [run.api_statistic[[c.API_NAME, c.COUNT, c.TOTAL_US]] for run in runs], ignore_index=True
    )
    apis = apis[apis[c.API_NAME].fillna("").astype(str).str.contains(COPY_PATTERN)]
    apis = apis.assign(**{c.COUNT: apis[c.COUNT].fillna(0)})
    host = [
        Share(share.name, share.count, share.total_us, None)
        for share in _shares(apis, c.API_NAME, 0.0)
    ]
    spent = float(copies[c.TOTAL_US].sum())
    return Copies(
        count=int(copies[c.COUNT].sum()),
        total_us=spent,
        share_pct=_percent(spent, total),
        tasks=tasks,
        host_api_count=sum(share.count for share in host),
        host_api_total_us=sum(share.total_us for share in host),
        host_apis=host,
    )


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def _rounded(value: Any) -> Any:
    """Floats to 3 decimals (µs to the ns) so that the JSON is stable and short; NaN → null."""
    if isinstance(value, dict):
        return {key: _rounded(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_rounded(inner) for inner in value]
    return plain_value(value, 3)
