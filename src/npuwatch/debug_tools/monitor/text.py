"""The monitor summary as people read it on a terminal: what was recorded, then each kind of
trouble per data type, statistic and rank, each rank at a glance, findings before problems."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from npuwatch.debug_tools.monitor.summary import MonitorSummary, StepGroup, rank_label
from npuwatch.terminal import Palette

_Add = Callable[[str], None]


def render_monitor_summary(summary: MonitorSummary, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    add(palette.bold(f"npuwatch monitor summary of {summary.root}"))
    for table in summary.tables:
        add(
            f"  {rank_label(table.rank):<7} {table.data_type:<15} steps {table.first_step}-"
            f"{table.last_step}, {table.rows} rows, {table.names} names, ops " + " ".join(table.ops)
        )
    if not summary.tables:
        add("  no statistics CSV (only anomaly alerts)")
    add("")
    _groups("Anomalies reported by msprobe", "RULE", summary.anomalies, palette, add)
    _groups("NaN / inf statistics", "", summary.nans, palette, add)
    ops = ", ".join(summary.spike_ops)
    _groups(
        f"Spikes of {ops} (|value| > {summary.spike_ratio:g}× the median of the previous "
        f"{summary.spike_window} steps)",
        "LARGEST",
        summary.spikes,
        palette,
        add,
    )
    _ranks(summary, palette, add)
    if summary.analysed:
        add(palette.bold(f"anomaly_analyse.json top {len(summary.analysed)}"))
        for entry in summary.analysed:
            add(
                f"  {rank_label(entry['rank']):<7} step {entry['step']:<6} {entry['rule']:<18} "
                f"{entry['data_type']} {entry['metric']}  {entry['module']}"
            )
        add("")
    if summary.findings:
        add(palette.bold("Findings"))
        for finding in summary.findings:
            add("  " + palette.highlight(finding.kind + ": ") + finding.message)
        add("")
    if summary.problems:
        add(palette.bold(f"Problems reading the monitor output ({len(summary.problems)})"))
        out.extend(f"  {problem}" for problem in summary.problems)
        add("")
    count = len(summary.findings)
    add(f"Result: {count} finding{'s' if count != 1 else ''}." if count else "Result: no findings.")
    return "\n".join(out)


def _groups(
    title: str, extra: str, groups: Sequence[StepGroup], palette: Palette, add: _Add
) -> None:
    add(palette.bold(title))
    if not groups:
        add("  none")
        add("")
        return
    add(f"  {'RANK':<7} {'DATA TYPE':<15} {'METRIC':<24} {extra:<18} {'COUNT':>5}  STEPS")
    for group in groups:
        if group.kind == "anomaly":
            detail = group.rule
        elif group.kind == "spike":
            detail = f"{group.largest or 0:.1f}×"
        else:
            detail = ""
        more = group.step_count - len(group.steps)
        steps = ", ".join(map(str, group.steps)) + (f" (+{more} more)" if more else "")
        add(
            f"  {rank_label(group.rank):<7} {group.data_type:<15} {group.metric:<24} "
            f"{detail:<18} {group.count:>5}  {steps}"
        )
        add(palette.dim(f"  {'':<7} in " + ", ".join(group.names)))
    add("")


def _ranks(summary: MonitorSummary, palette: Palette, add: _Add) -> None:
    add(palette.bold("Per rank"))
    add(f"  {'RANK':<7} {'LAST STEP':>9}  {'FIRST TROUBLE':<48} {'GRAD NORM':>11}  LARGEST")
    for rank in summary.ranks:
        trouble = (
            f"step {rank.first_trouble_step}: {rank.first_trouble}"
            if rank.first_trouble_step is not None
            else "-"
        )
        norm = "-" if rank.grad_norm is None else f"{rank.grad_norm:.4g}"
        largest = (
            f"{rank.largest_name} {rank.largest_norm:.4g}" if rank.largest_norm is not None else ""
        )
        last = "-" if rank.last_step is None else str(rank.last_step)
        line = f"  {rank_label(rank.rank):<7} {last:>9}  {trouble:<48} {norm:>11}  {largest}"
        add(palette.highlight(line) if rank.first_trouble_step is not None else line)
    if any(rank.grad_norm_step is not None for rank in summary.ranks):
        add(
            palette.dim(
                "  GRAD NORM: sqrt(Σ norm²) over the parameters at the last step of "
                "grad_reduced (or grad_unreduced)"
            )
        )
    add("")
