"""The profile summary as people read it on a terminal: aligned tables, durations in the unit
that suits them (µs, ms, s), findings before problems."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from npuwatch.profiling.steps import RankSteps
from npuwatch.profiling.summary import OperatorRow, ProfileSummary, Share
from npuwatch.terminal import Palette

_Add = Callable[[str], None]
_NAME_WIDTH = 44
_TYPE_WIDTH = 24


def render_profile_summary(summary: ProfileSummary, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    add(palette.bold(f"npuwatch profile summary of {summary.root}"))
    width = max((len(run.label) for run in summary.runs), default=0)
    for run in summary.runs:
        versions = ", ".join(
            f"{name} {version}"
            for name, version in (("torch_npu", run.torch_npu_version), ("CANN", run.cann_version))
            if version
        )
        state = "" if run.complete else "  (incomplete)"
        folder = run.source.rsplit("/", 1)[-1]
        source = "" if folder in run.label else f"  {folder}"
        add(
            f"  {run.label:<{width}}  {run.layout:<9} {run.kernels:>7} kernels{source}"
            + (f"  [{versions}]" if versions else "")
            + state
        )
    together = f" ({len(summary.runs)} runs added together)" if len(summary.runs) > 1 else ""
    add(
        f"  kernel time {duration(summary.kernel_time_us)} in {summary.kernel_count} "
        f"kernels{together}"
    )
    add("")
    if summary.by_time:
        _operators(f"Top {summary.top} operators by total time", summary.by_time, palette, add)
        _operators(f"Top {summary.top} operators by count", summary.by_count, palette, add)
        _shares("Operator types", "TYPE", summary.op_types, summary.top, palette, add)
        _shares("Cores (task types)", "CORE", summary.core_types, summary.top, palette, add)
        _copies(summary, palette, add)
    else:
        add("No kernels and no op_statistic: nothing to say about operators.")
        add("")
    _steps(summary, palette, add)
    findings_and_problems(summary.findings, summary.problems, palette, add)
    return "\n".join(out)


class _Finding(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def message(self) -> str: ...


def findings_and_problems(
    findings: Sequence[_Finding], problems: Sequence[str], palette: Palette, add: _Add
) -> None:
    """The end of a profile report (msprof/torch_npu or msOpProf): findings, the problems met
    while reading, and the result line."""
    if findings:
        add(palette.bold("Findings"))
        for finding in findings:
            add("  " + palette.highlight(finding.kind.replace("_", " ") + ": ") + finding.message)
        add("")
    if problems:
        add(palette.bold(f"Problems reading the profile ({len(problems)})"))
        for problem in problems:
            add(f"  {problem}")
        add("")
    count = len(findings)
    add(f"Result: {count} finding{'s' if count != 1 else ''}." if count else "Result: no findings.")


def duration(us: float | None) -> str:
    """`185.5 µs`, `21.77 ms`, `3.20 s`; `-` for no value."""
    if us is None:
        return "-"
    if abs(us) < 1000:
        return f"{us:.1f} µs"
    if abs(us) < 1_000_000:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1_000_000:.2f} s"


def shorten(name: str, width: int) -> str:
    """`name` in at most `width` characters, cut in the middle (the end tells kernels apart)."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head) :]


def _operators(title: str, rows: Sequence[OperatorRow], palette: Palette, add: _Add) -> None:
    add(palette.bold(title))
    add(
        f"  {'OPERATOR':<{_NAME_WIDTH}} {'TYPE':<{_TYPE_WIDTH}} {'CORE':<15} {'COUNT':>7} "
        f"{'TOTAL':>10} {'AVG':>10} {'SHARE':>6}"
    )
    for row in rows:
        add(
            f"  {shorten(row.op_name, _NAME_WIDTH):<{_NAME_WIDTH}} "
            f"{shorten(row.op_type, _TYPE_WIDTH):<{_TYPE_WIDTH}} {shorten(row.task_type, 15):<15} "
            f"{row.count:>7} {duration(row.total_us):>10} {duration(row.avg_us):>10} "
            f"{row.share_pct:>5.1f}%"
        )
    add("")


def _shares(
    title: str, column: str, shares: Sequence[Share], top: int, palette: Palette, add: _Add
) -> None:
    shown = shares[:top]
    more = f" (top {len(shown)} of {len(shares)})" if len(shares) > len(shown) else ""
    add(palette.bold(title + more))
    add(f"  {column:<{_TYPE_WIDTH}} {'COUNT':>7} {'TOTAL':>10} {'SHARE':>6}")
    for share in shown:
        percent = f"{share.share_pct:>5.1f}%" if share.share_pct is not None else "     -"
        add(
            f"  {shorten(share.name, _TYPE_WIDTH):<{_TYPE_WIDTH}} {share.count:>7} "
            f"{duration(share.total_us):>10} {percent}"
        )
    add("")


def _copies(summary: ProfileSummary, palette: Palette, add: _Add) -> None:
    copies = summary.copies
    add(palette.bold("Host↔device copies"))
    if copies.tasks:
        kinds = ", ".join(f"{share.name} ×{share.count}" for share in copies.tasks)
        add(
            f"  on the device: {copies.count} tasks, {duration(copies.total_us)}, "
            f"{copies.share_pct:.1f}% of kernel time ({kinds})"
        )
    else:
        add("  on the device: no memcpy/H2D/D2H tasks among the kernels")
    if copies.host_apis:
        calls = ", ".join(f"{share.name} ×{share.count}" for share in copies.host_apis)
        add(
            f"  host API: {copies.host_api_count} calls, {duration(copies.host_api_total_us)} "
            f"on the host ({calls})"
        )
    else:
        add("  host API: no aclrtMemcpy* calls in api_statistic (or no api_statistic)")
    add("")


def _steps(summary: ProfileSummary, palette: Palette, add: _Add) -> None:
    if not summary.steps:
        add("No step times (no step_trace_time.csv or step_trace).")
        add("")
        return
    add(palette.bold("Step time per rank (mean over its steps)"))
    width = min(max(len(rank.label) for rank in summary.steps), _NAME_WIDTH)
    add(
        f"  {'RANK':<{width}} {'STEPS':>5} {'STEP':>10} {'COMPUTING':>10} "
        f"{'COMM NOT OVERLAPPED':>20} {'FREE':>10}"
    )
    slowest = summary.spread.slowest if summary.findings and summary.spread else None
    for rank in summary.steps:
        line = _step_line(rank, width)
        add(palette.highlight(line) if rank.label == slowest else line)
    if summary.spread is not None:
        spread = summary.spread
        add(
            f"  spread {spread.spread_pct:.1f}% between {spread.fastest} (fastest) and "
            f"{spread.slowest} (slowest); above 5% names a slow rank"
        )
    add("")


def _step_line(rank: RankSteps, width: int) -> str:
    return (
        f"  {shorten(rank.label, width):<{width}} {rank.steps:>5} {duration(rank.step_us):>10} "
        f"{duration(rank.computing_us):>10} "
        f"{duration(rank.communication_not_overlapped_us):>20} {duration(rank.free_us):>10}"
    )
