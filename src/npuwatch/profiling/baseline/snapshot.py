"""A profile as the baseline library sees it: one operator table for all ranks, and its steps.

The same shape for both sides of a comparison: `profile_snapshot` makes one of the runs of a
PROF_DIR (and `stored_files`/`stored_metadata` what `baseline add` writes of it),
`read_snapshot` one of a stored baseline. `opprof_snapshot` makes one of msOpProf output
(OPPROF_*): each operator's launches, Task Duration per launch, in the same table, so a kernel
change that slows an operator fails `baseline compare` like a slower kernel of a training run,
and each operator's key figures (`opprof_figures`, which baseline.json keeps too).
`rank_steps` is the number of steps summed over the ranks (6 for 2 ranks of 3 steps): dividing
the total operator time by it gives the device time of one step of one rank, which does not
change with how many steps or ranks were profiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from npuwatch.parsers.table_numbers import numbers_of, usable_numbers
from npuwatch.profiling.baseline.archive import OPERATORS_FILE, RANKS_FOLDER, BaselineInfo
from npuwatch.profiling.msprof import columns as c
from npuwatch.profiling.msprof.operators import (
    OPERATOR_COLUMNS,
    combine_operator_tables,
    operator_table,
)
from npuwatch.profiling.msprof.run import ProfileRun
from npuwatch.profiling.opprof.read import OpProfRun
from npuwatch.profiling.opprof.summary import summarise_opprof
from npuwatch.profiling.steps import rank_steps

TEXT_COLUMNS = (c.OP_NAME, c.OP_TYPE, c.TASK_TYPE)
NUMBER_COLUMNS = (c.COUNT, c.TOTAL_US, c.AVG_US, c.MIN_US, c.MAX_US)
_FLOAT_FORMAT = "%.3f"
"""µs with three decimals: nanoseconds, the resolution msprof writes."""


@dataclass(frozen=True)
class RankTable:
    """The operator table of one rank (or device) of a profile, with its steps."""

    label: str
    rank: int | None
    device_id: int | None
    source: str
    steps: int | None
    step_us: float | None
    """Mean step time (µs), None when the run has no step trace."""
    table: pd.DataFrame
    file: str
    """Where `baseline add` keeps this table, relative to the baseline's folder."""


@dataclass(frozen=True)
class Snapshot:
    """The operators of one profile (all ranks together) and what is needed to compare it."""

    table: pd.DataFrame
    """OPERATOR_COLUMNS, one row per (op_name, op_type, task_type), all ranks added up."""
    source: str
    ranks: int | None
    rank_steps: int | None
    """Steps summed over ranks; None when any rank has no step trace."""
    step_us: float | None
    """Mean step time over the ranks that have one."""
    cann_version: str | None = None
    torch_npu_version: str | None = None
    layout: str | None = None
    rank_tables: tuple[RankTable, ...] = ()
    """Each rank's own table (a profile read from disk; empty for a stored baseline)."""
    opprof_figures: tuple[dict[str, Any], ...] = ()
    """msOpProf only: each operator's bound and key figures (of its longest launch), kept in
    baseline.json (`opprof_operators`) and compared by opprof_figures."""

    @property
    def total_us(self) -> float:
        return float(self.table[c.TOTAL_US].sum())

    @property
    def launch_count(self) -> int:
        return int(self.table[c.COUNT].sum())

    @property
    def per_step_us(self) -> float | None:
        """Operator time of one step of one rank, when the steps are known."""
        return self.total_us / self.rank_steps if self.rank_steps else None


def profile_snapshot(runs: Sequence[ProfileRun], source: Path) -> Snapshot:
    """The snapshot of the runs `load_profiles(source)` found (one per rank or device)."""
    ranks: list[RankTable] = []
    for run in runs:
        steps = rank_steps(run, run.label)
        ranks.append(
            RankTable(
                label=run.label,
                rank=run.rank,
                device_id=run.device_id,
                source=str(run.source),
                steps=steps.steps if steps else None,
                step_us=steps.step_us if steps else None,
                table=operator_table(run),
                file=_rank_file(run, {rank.file for rank in ranks}),
            )
        )
    counted = [rank.steps for rank in ranks]
    timed = [rank.step_us for rank in ranks if rank.step_us is not None]
    return Snapshot(
        table=combine_operator_tables(rank.table for rank in ranks),
        source=str(source),
        ranks=len(ranks),
        rank_steps=sum(s for s in counted if s) if ranks and all(counted) else None,
        step_us=sum(timed) / len(timed) if timed else None,
        cann_version=_first(run.cann_version for run in runs),
        torch_npu_version=_first(run.torch_npu_version for run in runs),
        layout=_first(run.layout for run in runs),
        rank_tables=tuple(ranks),
    )


OPPROF_LAYOUT = "msopprof"


def opprof_snapshot(runs: Sequence[OpProfRun], source: Path) -> Snapshot:
    """The snapshot of msOpProf runs: one row per operator (op_name, its Op Type, the core type
    msprof would name), its launches and Task Durations. No steps: launches are compared."""
    summary = summarise_opprof(
        runs, root=str(source), top=max(1, sum(len(r.launches) for r in runs))
    )
    rows = [
        [total.op_name, total.op_type, total.task_type, total.count, total.total_us,
         total.avg_us, total.min_us, total.max_us]
        for total in summary.operators
    ]  # fmt: skip
    table = pd.DataFrame(rows, columns=OPERATOR_COLUMNS)
    table[c.COUNT] = table[c.COUNT].astype("int64")
    for column in NUMBER_COLUMNS[1:]:
        table[column] = table[column].astype("float64")
    longest: dict[str, dict[str, Any]] = {}
    for report in summary.launches:  # the longest launch first
        if report.duration_us is not None and report.op_name not in longest:
            longest[report.op_name] = {
                "op_name": report.op_name,
                "duration_us": round(report.duration_us, 3),
                **{
                    key: round(value, 3) if isinstance(value, float) else value
                    for key, value in asdict(report.figures).items()
                    if key not in ("pipes", "conflicts")
                },
            }
    return Snapshot(
        table=table,
        source=str(source),
        ranks=None,
        rank_steps=None,
        step_us=None,
        layout=OPPROF_LAYOUT,
        opprof_figures=tuple(longest.values()),
    )


def stored_files(snapshot: Snapshot) -> dict[str, str]:
    """What `baseline add` writes as CSV: the table of all ranks, and each rank's when several."""
    files = {OPERATORS_FILE: as_csv(snapshot.table)}
    if len(snapshot.rank_tables) > 1:
        files.update({rank.file: as_csv(rank.table) for rank in snapshot.rank_tables})
    return files


def stored_metadata(snapshot: Snapshot) -> dict[str, Any]:
    """What baseline.json says of the profile (the caller adds host, time and version)."""
    several = len(snapshot.rank_tables) > 1
    return {
        "source": snapshot.source,
        "layout": snapshot.layout,
        "cann_version": snapshot.cann_version,
        "torch_npu_version": snapshot.torch_npu_version,
        "operators": len(snapshot.table),
        "total_us": round(snapshot.total_us, 3),
        "rank_steps": snapshot.rank_steps,
        "step_us": _rounded(snapshot.step_us),
        **({"opprof_operators": list(snapshot.opprof_figures)} if snapshot.opprof_figures else {}),
        "ranks": None
        if not snapshot.rank_tables
        else [
            {
                "label": rank.label,
                "rank": rank.rank,
                "device_id": rank.device_id,
                "source": rank.source,
                "file": rank.file if several else OPERATORS_FILE,
                "steps": rank.steps,
                "step_us": _rounded(rank.step_us),
                "operators": len(rank.table),
                "total_us": round(float(rank.table[c.TOTAL_US].sum()), 3),
            }
            for rank in snapshot.rank_tables
        ],
    }


def read_snapshot(info: BaselineInfo) -> Snapshot:
    """The snapshot of a stored baseline; ValueError when its op_summary.csv is not one."""
    return Snapshot(
        table=read_operator_csv(info.operators_csv),
        source=info.source or str(info.path),
        ranks=info.ranks,
        rank_steps=info.rank_steps,
        step_us=info.step_us,
        cann_version=info.cann_version,
        torch_npu_version=info.torch_npu_version,
        layout=info.metadata.get("layout")
        if isinstance(info.metadata.get("layout"), str)
        else None,
        opprof_figures=_stored_figures(info.metadata.get("opprof_operators")),
    )


def _stored_figures(stored: Any) -> tuple[dict[str, Any], ...]:
    """The key figures baseline.json keeps; none when it has none (stored before they were
    kept, or not msOpProf) or when they are not a list of objects (an edited file)."""
    if not isinstance(stored, list):
        return ()
    return tuple(dict(item) for item in stored if isinstance(item, dict))


def as_csv(table: pd.DataFrame) -> str:
    text: str = table[OPERATOR_COLUMNS].to_csv(
        index=False, float_format=_FLOAT_FORMAT, lineterminator="\n"
    )
    return text


def read_operator_csv(path: Path) -> pd.DataFrame:
    """An operator table written by `as_csv` (names kept as written: `NA` is an op name)."""
    try:
        frame = pd.read_csv(
            path,
            dtype=dict.fromkeys(TEXT_COLUMNS, str),
            keep_default_na=False,
            na_values={column: [""] for column in NUMBER_COLUMNS},
        )
    except (OSError, ValueError, pd.errors.ParserError) as failure:
        raise ValueError(f"{path}: cannot read ({failure})") from None
    missing = [column for column in OPERATOR_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: no column {', '.join(missing)}; an op_summary.csv of the archive has "
            f"the header {','.join(OPERATOR_COLUMNS)}"
        )
    table: pd.DataFrame = frame[OPERATOR_COLUMNS].copy()
    for column in NUMBER_COLUMNS:
        numbers = usable_numbers(numbers_of(table[column]))
        # A value that is there but no number (or inf, or past 64 bits): an edited or damaged
        # archive, not a gap to fill.
        damaged = numbers.isna() & table[column].notna()
        if damaged.any():
            row = int(damaged.to_numpy().argmax())
            raise ValueError(
                f"{path}: line {row + 2}: {column} {str(table[column].iloc[row])[:40]!r} is not "
                "a number; "
                "fix the value, or add the baseline again"
            )
        table[column] = numbers
    table[c.COUNT] = table[c.COUNT].fillna(0).astype("int64")
    return table


def _first(values: Any) -> str | None:
    return next((value for value in values if value), None)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _rank_file(run: ProfileRun, taken: set[str]) -> str:
    if run.rank is not None:
        stem = f"rank-{run.rank}"
    elif run.device_id is not None:
        stem = f"device-{run.device_id}"
    else:
        stem = run.source.name
    name, number = stem, 1
    while f"{RANKS_FOLDER}/{name}.csv" in taken:  # two runs naming neither rank nor device
        number += 1
        name = f"{stem}-{number}"
    return f"{RANKS_FOLDER}/{name}.csv"
