"""The msOpProf summary as people read it on a terminal: the operators, then one block per
launch with its four key figures (bound, AI Core utilisation, bandwidth, copy share) first, then
what its trace and visualize_data.bin add (msOpProf's advice, communication, block spans)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from npuwatch.profiling.opprof.figures import Share
from npuwatch.profiling.opprof.summary import Hotspot, LaunchReport, OpProfSummary, launch_title
from npuwatch.profiling.opprof.trace_summary import BlockSpread, Communication
from npuwatch.profiling.text import duration, findings_and_problems, shorten
from npuwatch.terminal import Palette

_Add = Callable[[str], None]
_NAME_WIDTH = 40
_CODE_WIDTH = 60


def render_opprof_summary(summary: OpProfSummary, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    add(palette.bold(f"npuwatch profile summary of {summary.root} (msOpProf)"))
    width = max((len(run.label) for run in summary.runs), default=0)
    for run in summary.runs:
        plural = "launch" if run.launches == 1 else "launches"
        add(f"  {run.label:<{width}}  {run.layout:<16} {run.launches:>4} {plural}")
    add("")
    _operators(summary, palette, add)
    shown = len(summary.launches)
    more = (
        f" (the {shown} longest of {summary.launch_count})" if shown < summary.launch_count else ""
    )
    add(palette.bold(f"Launches{more}"))
    for report in summary.launches:
        _launch(report, palette, add)
    findings_and_problems(summary.findings, summary.problems, palette, add)
    return "\n".join(out)


def _operators(summary: OpProfSummary, palette: Palette, add: _Add) -> None:
    if not summary.operators:
        add("No launch has a Task Duration (no OpBasicInfo.csv): nothing to add up per operator.")
        add("")
        return
    add(palette.bold("Operators by total duration"))
    add(
        f"  {'OPERATOR':<{_NAME_WIDTH}} {'TYPE':<7} {'LAUNCHES':>8} {'TOTAL':>10} "
        f"{'AVG':>10} {'MAX':>10}  BOUND (LONGEST LAUNCH)"
    )
    for total in summary.operators[: summary.top]:
        add(
            f"  {shorten(total.op_name, _NAME_WIDTH):<{_NAME_WIDTH}} {total.op_type:<7} "
            f"{total.count:>8} {duration(total.total_us):>10} {duration(total.avg_us):>10} "
            f"{duration(total.max_us):>10}  {total.bound_label}"
        )
    add("")


def _launch(report: LaunchReport, palette: Palette, add: _Add) -> None:
    kind = f" [{report.op_type}]" if report.op_type else ""
    soc = f" on {report.soc_version}" if report.soc_version else ""
    where = report.run if report.folder == "." else f"{report.run}/{report.folder}"
    add("  " + palette.bold(launch_title(report)) + kind + soc + f"  {where}")
    blocks = "-" if report.block_dim is None else str(report.block_dim)
    if report.mix_block_dim is not None:
        blocks += f" (mix {report.mix_block_dim})"
    add(
        f"    duration {duration(report.duration_us)}, block dim {blocks}, "
        f"AI Core {_frequency(report, palette)}"
    )
    if not report.metrics:
        add("    no metric CSV (--aic-metrics=BasicInfo, or a simulator run)")
    else:
        _figures(report, add)
    _traced(report, palette, add)
    _hotspots("hottest lines", report.code_hotspots, add)
    _hotspots("hottest instructions", report.instruction_hotspots, add)
    add("")


def _figures(report: LaunchReport, add: _Add) -> None:
    figures = report.figures
    add(f"    bound                {figures.bound_label}")
    utilisation = (
        f"{figures.core_utilisation_pct:.1f}% ({figures.core_utilisation_pipe})"
        if figures.core_utilisation_pct is not None
        else "-"
    )
    add(f"    AI Core utilisation  {utilisation}")
    bandwidth = []
    if figures.bandwidth_usage_pct is not None:
        bandwidth.append(f"{figures.bandwidth_usage_pct:.1f}% of {figures.bandwidth_channel}")
    if figures.main_memory_gb_s is not None:
        bandwidth.append(f"main memory {figures.main_memory_gb_s:.1f} GB/s")
    add(f"    bandwidth use        {', '.join(bandwidth) or '- (no Memory.csv)'}")
    copies = (
        "-" if figures.copy_share_pct is None else f"{figures.copy_share_pct:.1f}% of core time"
    )
    add(f"    copy share (MTE)     {copies}")
    if figures.pipes:
        add(f"    pipes                {_shares(figures.pipes)}")
    if figures.l2_hit_rate_pct is not None:
        add(f"    L2 hit rate          {figures.l2_hit_rate_pct:.1f}%")
    if figures.conflicts:
        add(f"    conflicts, waits     {_shares(figures.conflicts)}")


def _traced(report: LaunchReport, palette: Palette, add: _Add) -> None:
    """The lines of a launch's trace.json and visualize_data.bin; none without them."""
    if report.communication:
        _communication(report.communication, add)
    if report.block_spread:
        _block_spread(report.block_spread, palette, add)
    if report.trace_pipes:
        cores = max(pipe.cores for pipe in report.trace_pipes)
        busy = ", ".join(f"{pipe.pipe} {duration(pipe.busy_us)}" for pipe in report.trace_pipes)
        add(f"    pipes busy (trace)   {busy} (over {cores} core{'s' if cores != 1 else ''})")
    if report.advice:
        add("    msOpProf advice")
        for advice in report.advice:
            add(f"      - {advice}")


def _communication(communication: Communication, add: _Add) -> None:
    total = _tasks(communication.tasks, communication.time_us, communication.size_bytes,
                   communication.gb_s)  # fmt: skip
    add(f"    communication        {total}")
    for link in communication.links:
        name = f"{link.link_type or '?'}/{link.transport_type or '?'}"
        add(f"      {name:<18} {_tasks(link.tasks, link.time_us, link.size_bytes, link.gb_s)}")


def _tasks(count: int, time_us: float, size: float, gb_s: float | None) -> str:
    """`3 tasks, 25.8 µs: 4.0 MiB moved at 180.0 GB/s` (over the tasks that moved bytes)."""
    plural = "task" if count == 1 else "tasks"
    moved = f"{_size(size)} moved" + (f" at {gb_s:.1f} GB/s" if gb_s is not None else "")
    return f"{count} {plural}, {duration(time_us)}: {moved}"


def _size(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:.0f} B"


def _block_spread(spread: BlockSpread, palette: Palette, add: _Add) -> None:
    span = f"{spread.blocks} blocks, {duration(spread.fastest_us)} to {duration(spread.slowest_us)}"
    if spread.spread_pct is None:
        add(f"    block spans          {span}")
        return
    longer = f"{spread.slowest} ran {spread.spread_pct:.1f}% longer than {spread.fastest}"
    if spread.imbalanced:
        longer = palette.highlight("load imbalance? ") + longer
    add(f"    block spans          {span}: {longer}")


def _frequency(report: LaunchReport, palette: Palette) -> str:
    current, rated = report.current_freq_mhz, report.rated_freq_mhz
    if current is None:
        return "frequency -" if rated is None else f"rated {rated:g} MHz"
    text = f"{current:g}" + (f"/{rated:g}" if rated is not None else "") + " MHz"
    return palette.highlight(text + " (down-clocked)") if report.down_clocked else text


def _shares(shares: Sequence[Share]) -> str:
    return ", ".join(f"{share.name} {share.pct:.1f}%" for share in shares)


def _hotspots(title: str, spots: Sequence[Hotspot], add: _Add) -> None:
    if not spots:
        return
    add(f"    {title} (cycles over all simulated cores)")
    for spot in spots:
        pipe = f" {spot.pipe}" if spot.pipe else ""
        calls = f"  ×{spot.call_count}" if spot.call_count is not None else ""
        add(f"      {spot.cycles:>10.0f}  {shorten(spot.what, _CODE_WIDTH)}{pipe}{calls}")
