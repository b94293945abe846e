"""The sanitizer summary as people read it on a terminal: the reports read, each group of
findings with its first record, stack and advice, leaks, AI Core errors, then problems."""

from __future__ import annotations

from collections.abc import Callable

from npuwatch.debug_tools.sanitizer.aicore import AicoreError
from npuwatch.debug_tools.sanitizer.summary import Group, SanitizerSummary
from npuwatch.terminal import Palette

_Add = Callable[[str], None]
MAX_FRAMES_SHOWN = 8


def render_sanitizer_summary(summary: SanitizerSummary, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    add(palette.bold(f"npuwatch sanitizer summary of {summary.root}"))
    _sources(summary, add)
    add("")
    if summary.groups:
        shown = len(summary.groups)
        more = f" (top {shown} of {summary.groups_total})" if summary.groups_total > shown else ""
        add(palette.bold(f"msSanitizer findings by kind and kernel{more}"))
        for group in summary.groups:
            _group(group, palette, add)
        add("")
    elif summary.reports:
        add("msSanitizer found no error and no warning.")
        add("")
    _leaks(summary, palette, add)
    if summary.aicore_errors:
        add(palette.bold(f"AI Core errors from msaicerr ({len(summary.aicore_errors)})"))
        for error in summary.aicore_errors:
            _aicore_error(error, palette, add)
        if summary.msaicerr_log:
            add("  msaicerr's own warnings and errors:")
            out.extend(f"    {line}" for line in summary.msaicerr_log)
        add("")
    if summary.problems:
        add(palette.bold(f"Problems reading the reports ({len(summary.problems)})"))
        out.extend(f"  {problem}" for problem in summary.problems)
        add("")
    add(_result(summary))
    return "\n".join(out)


def _sources(summary: SanitizerSummary, add: _Add) -> None:
    width = max(
        [len(report.source) for report in summary.reports]
        + [len(output.folder) for output in summary.msaicerr_outputs],
        default=0,
    )
    for report in summary.reports:
        checked = (
            f"  {_count(report.kernels_checked, 'kernel')} checked"
            if report.kernels_checked is not None
            else ""
        )
        cut = "  (cut short)" if not report.complete else ""
        add(
            f"  {report.source:<{width}}  {_count(report.errors, 'error'):>10}  "
            f"{_count(report.warnings, 'warning'):>11}{checked}{cut}"
        )
    for output in summary.msaicerr_outputs:
        add(
            f"  {output.folder:<{width}}  msaicerr: {_count(output.listed, 'AI Core error')} "
            f"listed, {output.analysed} analysed"
        )


def _group(group: Group, palette: Palette, add: _Add) -> None:
    where = [", ".join(group.memory_spaces)] if group.memory_spaces else []
    if group.total_bytes is not None:
        where.append(f"{group.total_bytes} bytes")
    if group.devices:
        where.append(f"device {', '.join(str(device) for device in group.devices)}")
    if group.blocks:
        where.append(f"block {', '.join(group.blocks)}")
    kernel = f" in {group.kernel}" if group.kernel else ""
    title = f"{kind_title(group.kind)} ×{group.count}{kernel}"
    add(
        f"  {palette.level(group.level, f'{group.level:<7}')} {palette.bold(title)}"
        + (f" — {'; '.join(where)}" if where else "")
    )
    add(f"    first: {group.first_at}  {group.first}")
    for line in group.stack[:MAX_FRAMES_SHOWN]:
        add(f"      {line}")
    if len(group.stack) > MAX_FRAMES_SHOWN:
        add(f"      … {len(group.stack) - MAX_FRAMES_SHOWN} more frames")
    for event in group.events:
        add(f"      {event}")
    add(f"    advice: {group.advice}")


def _leaks(summary: SanitizerSummary, palette: Palette, add: _Add) -> None:
    leaks = summary.leaks
    if not leaks.count and leaks.summary_bytes is None and not leaks.unused_count:
        return
    add(palette.bold("Memory leaks"))
    reported = ""
    if leaks.summary_bytes is not None:
        reported = (
            f" (the report's SUMMARY: {leaks.summary_bytes} bytes in "
            f"{_count(leaks.summary_allocations or 0, 'allocation')})"
        )
    add(f"  {_count(leaks.count, 'allocation')} leaked, {leaks.bytes} bytes{reported}")
    for allocation in leaks.allocations:
        add(f"    {allocation}")
    if leaks.unused_count:
        add(f"  {_count(leaks.unused_count, 'allocation')} never used, {leaks.unused_bytes} bytes")
    add("")


def _aicore_error(error: AicoreError, palette: Palette, add: _Add) -> None:
    node = f" (node {error.node})" if error.node else ""
    place = ", ".join(
        f"{name} {value}"
        for name, value in (("device", error.device), ("core", error.core), ("task", error.task))
        if value
    )
    code = f": error code {error.error_code}" if error.error_code else ""
    add(f"  {palette.level('ERROR', error.kernel or '?')}{node} on {place}{code}")
    add(f"    conclusion: {error.conclusion}")
    if error.start_pc or error.current_pc:
        fault = f"; instruction {error.faulting_instruction}" if error.faulting_instruction else ""
        add(f"    pc start {error.start_pc or '?'}, current {error.current_pc or '?'}{fault}")
    if error.single_op_result:
        add(f"    single-operator test: {error.single_op_result}")
    add(f"    from: {error.source}")
    add(f"    advice: {error.advice}")


def _result(summary: SanitizerSummary) -> str:
    if summary.has_findings:
        parts = [_count(summary.errors, "error"), _count(summary.warnings, "warning")]
        if summary.aicore_errors:
            parts.append(_count(len(summary.aicore_errors), "AI Core error"))
        return f"Result: {', '.join(parts)}."
    if summary.warnings:
        return f"Result: no errors ({_count(summary.warnings, 'warning')} listed above)."
    return "Result: no errors or warnings."


def kind_title(kind: str) -> str:
    """`illegal write`, `RAW hazard`, `unpaired set_flag` for the record kinds."""
    words = kind.split("_")
    if words[-1] == "hazard":
        return f"{words[0].upper()} hazard"
    if words[-1] == "flag":
        return f"{words[0]} {words[1]}_flag"
    return " ".join(words)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
