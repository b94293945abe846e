"""What msOpProf measured of each operator launch: `npuwatch profile summary OPPROF_…`.

For every launch of every OPPROF folder: its duration, block dim and AI Core frequency (a launch
run below the rated frequency is a finding: its times are not comparable), the key figures of
`figures` (pipe shares and the bound, AI Core utilisation, bandwidth use, copy share, L2 hit
rate, conflicts) and, for simulator runs, the hottest source lines and instructions of all cores.
What its trace.json and visualize_data.bin add (msOpProf's advice, the communication of MC2
operators, the block spread, the simulator's pipe times) is `trace_summary`; those keys are
left out of the JSON of a launch that has neither file.
Launches of the same operator are added up in an operator table, the biggest total first; the
baseline library stores that table. Durations are µs; the text rendering is `text`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from npuwatch.profiling.opprof.figures import KeyFigures, key_figures
from npuwatch.profiling.opprof.read import OpLaunch, OpProfRun
from npuwatch.profiling.opprof.trace_summary import (
    BlockSpread,
    Communication,
    PipeTime,
    trace_figures,
)
from npuwatch.profiling.steps import Finding

SCHEMA_VERSION = 1
HOTSPOTS_SHOWN = 5
TASK_TYPES = {"vector": "AI_VECTOR_CORE", "cube": "AI_CORE", "mix": "MIX_AIC", "aicore": "AI_CORE"}
"""msOpProf's Op Type as the core type of msprof's op_summary, so that baselines agree."""


@dataclass(frozen=True)
class Hotspot:
    """A source line or an instruction of a simulator run, its cycles summed over the cores."""

    what: str
    pipe: str | None
    cycles: float
    call_count: int | None
    running_time_us: float | None
    cores: int


@dataclass(frozen=True)
class LaunchReport:
    """One launch of one operator."""

    run: str
    folder: str
    op_name: str
    op_type: str | None
    device_id: int | None
    launch: int | None
    soc_version: str | None
    duration_us: float | None
    block_dim: int | None
    mix_block_dim: int | None
    current_freq_mhz: float | None
    rated_freq_mhz: float | None
    down_clocked: bool
    metrics: list[str]
    figures: KeyFigures
    code_hotspots: list[Hotspot]
    instruction_hotspots: list[Hotspot]
    advice: list[str] = field(default_factory=list)
    """msOpProf's own advice (visualize_data.bin)."""
    visualize_blocks: list[str] = field(default_factory=list)
    communication: Communication | None = None
    block_spread: BlockSpread | None = None
    trace_pipes: list[PipeTime] = field(default_factory=list)


_FROM_TRACE = ("advice", "visualize_blocks", "communication", "block_spread", "trace_pipes")
"""LaunchReport keys that only a launch with a trace.json or visualize_data.bin has."""


@dataclass(frozen=True)
class OperatorTotal:
    """All launches of one operator: the row the baseline archive keeps."""

    op_name: str
    op_type: str
    task_type: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    max_us: float
    bound_label: str
    """The bound of its longest launch."""


@dataclass(frozen=True)
class RunInfo:
    label: str
    source: str
    layout: str
    launches: int
    problems: int


@dataclass(frozen=True)
class OpProfSummary:
    """Everything `npuwatch profile summary` reports of msOpProf output."""

    root: str
    top: int
    runs: list[RunInfo]
    operators: list[OperatorTotal]
    launch_count: int
    launches: list[LaunchReport]
    """The `top` longest launches (all launches when fewer), the longest first."""
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tool: str = "msopprof"

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of `--json`: stable keys, µs in fields ending in _us."""
        document = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        for launch in document["launches"]:
            for key in _FROM_TRACE:
                if launch[key] in (None, []):
                    del launch[key]
        return {key: _rounded(value) for key, value in document.items()}


def summarise_opprof(runs: Sequence[OpProfRun], *, root: str, top: int) -> OpProfSummary:
    reports = [_launch_report(run, launch) for run in runs for launch in run.launches]
    longest = sorted(reports, key=lambda report: -(report.duration_us or 0.0))
    findings = [
        Finding(
            "down_clocked",
            f"{launch_title(report)} ran at {report.current_freq_mhz:g} MHz, below the rated "
            f"{report.rated_freq_mhz:g} MHz: its times are not comparable with a full-speed run",
        )
        for report in reports
        if report.down_clocked
    ]
    return OpProfSummary(
        root=root,
        top=top,
        runs=[
            RunInfo(
                run.source.name, str(run.source), run.layout, len(run.launches), len(run.problems)
            )
            for run in runs
        ],
        operators=operator_totals(reports),
        launch_count=len(reports),
        launches=longest[:top],
        findings=findings,
        problems=[problem for run in runs for problem in run.problems],
    )


def operator_totals(reports: Iterable[LaunchReport]) -> list[OperatorTotal]:
    """The launches with a duration, added up per (op_name, op_type), the biggest total first."""
    groups: dict[tuple[str, str], list[LaunchReport]] = {}
    for report in reports:
        if report.duration_us is not None:
            groups.setdefault((report.op_name, report.op_type or ""), []).append(report)
    totals = []
    for (name, kind), launches in groups.items():
        times = [launch.duration_us or 0.0 for launch in launches]
        longest = max(launches, key=lambda launch: launch.duration_us or 0.0)
        totals.append(
            OperatorTotal(
                op_name=name,
                op_type=kind,
                task_type=TASK_TYPES.get(kind.lower(), kind.upper()),
                count=len(times),
                total_us=sum(times),
                avg_us=sum(times) / len(times),
                min_us=min(times),
                max_us=max(times),
                bound_label=longest.figures.bound_label,
            )
        )
    return sorted(totals, key=lambda total: (-total.total_us, total.op_name, total.op_type))


def _launch_report(run: OpProfRun, launch: OpLaunch) -> LaunchReport:
    basic = launch.basic
    traced = trace_figures(launch)
    current, rated = basic.current_freq_mhz, basic.rated_freq_mhz
    return LaunchReport(
        run=run.source.name,
        folder=launch.folder,
        op_name=launch.op_name,
        op_type=basic.op_type,
        device_id=launch.device_id,
        launch=launch.launch,
        soc_version=basic.soc_version,
        duration_us=basic.duration_us,
        block_dim=basic.block_dim,
        mix_block_dim=basic.mix_block_dim,
        current_freq_mhz=current,
        rated_freq_mhz=rated,
        down_clocked=current is not None and rated is not None and current < rated,
        metrics=sorted(launch.metrics),
        figures=key_figures(launch),
        code_hotspots=_hotspots(
            (line.code, None, line.cycles, line.call_count, line.running_time_us)
             for core in launch.cores for line in core.code_lines
        ),
        instruction_hotspots=_hotspots(
            (f"{item.instr} @{item.addr}", item.pipe or None, item.cycles, item.call_count,
              item.running_time_us)
             for core in launch.cores for item in core.instructions
        ),
        advice=traced.advice,
        visualize_blocks=traced.visualize_blocks,
        communication=traced.communication,
        block_spread=traced.block_spread,
        trace_pipes=traced.trace_pipes,
    )  # fmt: skip


_HotspotRow = tuple[str, str | None, float, int | None, float | None]


def _hotspots(rows: Iterable[_HotspotRow]) -> list[Hotspot]:
    """The same line (or PC) of several cores added up; the most cycles first."""
    merged: dict[tuple[str, str | None], list[_HotspotRow]] = {}
    for row in rows:
        merged.setdefault((row[0], row[1]), []).append(row)
    spots = [
        Hotspot(
            what=what,
            pipe=pipe,
            cycles=sum(row[2] for row in same),
            call_count=_sum_known(row[3] for row in same),
            running_time_us=_sum_known(row[4] for row in same),
            cores=len(same),
        )
        for (what, pipe), same in merged.items()
    ]
    spots.sort(key=lambda spot: (-spot.cycles, spot.what))
    return spots[:HOTSPOTS_SHOWN]


def _sum_known(values: Iterable[Any]) -> Any:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def launch_title(report: LaunchReport) -> str:
    """`add_custom (device 0, launch 3)`; `(unnamed operator)` without OpBasicInfo."""
    parts = [f"device {report.device_id}"] if report.device_id is not None else []
    parts += [f"launch {report.launch}"] if report.launch is not None else []
    return (report.op_name or "(unnamed operator)") + (f" ({', '.join(parts)})" if parts else "")


def _rounded(value: Any) -> Any:
    """Floats to 3 decimals so that the JSON is stable and short."""
    if isinstance(value, dict):
        return {key: _rounded(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_rounded(inner) for inner in value]
    if isinstance(value, float):
        return round(value, 3)
    return value
