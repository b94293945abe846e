"""The scan report as people read it: most important first, times in the local zone.

Everything in it that comes from the tree (file and host names, log lines, process names) or
from rule packs is shown on its line, never acted on by the terminal (terminal.visible_line).

A collection of hosts (`hosts`) names the host wherever a pid is shown; one host's tree is
reported as it always was.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import tzinfo
from typing import Any

from npuwatch.correlation.report_text import render_incidents
from npuwatch.rules.events import Event
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.findings import Verdict, describe, group, place
from npuwatch.terminal import Palette, format_datetime
from npuwatch.terminal import visible_line as shown

_Add = Callable[[str], None]
_TOP_MODULES = 12
_FINDING_CONTEXT = 5
_PLACES_SHOWN = 6
_MAX_PROCESSES_LISTED = 20
_HOSTS_SHOWN = 12
_HOST_COLUMN = 24


def render_scan(result: ScanResult, zone: tzinfo, palette: Palette) -> str:
    out: list[str] = []
    add = out.append
    span = (
        f"{format_datetime(result.first_us, zone)} → {format_datetime(result.last_us, zone)}"
        if result.first_us is not None
        else "no timestamps"
    )
    add(palette.bold(f"npuwatch scan of {shown(result.root)}"))
    add(
        f"  {result.files} files, {result.bytes / 1e6:.1f} MB, {result.lines} lines, "
        f"{result.records} records, {len(result.processes)} processes, "
        f"devices {_join(str(d) for d in sorted(result.devices)) or '-'}"
    )
    if result.collection:
        hosts = _join(map(shown, result.hosts[:_HOSTS_SHOWN]))
        more = len(result.hosts) - _HOSTS_SHOWN
        count = len(result.hosts)
        add(
            f"  {count} host{'s' if count != 1 else ''}: {hosts}"
            + (f" and {more} more" if more > 0 else "")
        )
    add(f"  time span: {span}")
    add("")
    if result.incidents:  # which device failed first comes before everything else
        out.extend(render_incidents(result.incidents, zone, palette, result.root))
    add(palette.bold("Levels") + "   " + _counts(result.levels, palette, levels=True))
    add(palette.bold("Modules") + "  " + _counts(result.modules, palette, limit=_TOP_MODULES))
    add(palette.bold("Kinds") + "    " + _counts(result.kinds, palette))
    if result.flags:
        add(palette.bold("Flags") + "    " + _counts(result.flags, palette))
    add("")
    first_failure = result.first_failure() if result.rules_applied else None
    if first_failure is not None:
        add(_verdict_line(first_failure, zone, palette))
        add("")
    if result.rules_applied:
        _findings(result, zone, palette, add)
    _error_codes(result, zone, palette, add)
    _first_errors(result, zone, palette, add)
    _processes(result, zone, palette, add)
    if result.problems:
        add(palette.bold(f"Problems reading the tree ({len(result.problems)})"))
        out.extend(f"  {shown(problem)}" for problem in result.problems)
        add("")
    errors = result.error_records
    outcome = palette.level("ERROR", f"{errors} error records") if errors else "no error records"
    add(f"Result: {outcome} in {result.records} records.")
    return "\n".join(out)


def _verdict_line(first: Verdict, zone: tzinfo, palette: Palette) -> str:
    event = first.event
    info = describe(event)
    where = _where(event)
    message = shown(info["message"].split("\n", 1)[0])
    tail = (
        f" ({first.symptoms_after} later events are likely consequences)"
        if first.symptoms_after
        else ""
    )
    advice = textwrap.fill(
        shown(event.rule.spec.advice), 96, initial_indent="  ", subsequent_indent="  "
    )
    return (
        palette.bold("Most likely first failure: ")
        + palette.level("ERROR", shown(event.rule.spec.title))
        + f" — {where} at {format_datetime(event.first_us, zone)}: {message}{tail}.\n"
        + palette.bold("What to check first:")
        + "\n"
        + advice
    )


def _findings(result: ScanResult, zone: tzinfo, palette: Palette, add: _Add) -> None:
    findings = group(result.events)
    if not findings:
        add("Findings: none (no rule matched)")
        add("")
        return
    add(palette.bold(f"Findings ({len(findings)} rules, {len(result.events)} events)"))
    for finding in findings:
        level = finding.severity.upper()
        symptom = palette.dim(" (symptom)") if finding.symptom else ""
        add(
            "  "
            + palette.level(level if level != "CRITICAL" else "CRITICAL", f"[{level}]")
            + f" {shown(finding.title)}{symptom} — {finding.count}× "
            f"from {format_datetime(finding.first_us, zone)} "
            + palette.dim(shown(f"[{finding.rule_id}, {finding.layer}/{finding.category}]"))
        )
        places = finding.first_per_place()
        add(f"      where: {_places(places, finding.rank_per_place())}")
        for line in textwrap.wrap(shown(finding.advice), 92):
            add("      " + line)
        first = places[0]
        for line in first.before[-_FINDING_CONTEXT:]:
            add(palette.dim("      │ " + shown(line.split("\n", 1)[0][:160])))
        add("      " + palette.level(level, "▶ " + shown(first.original.split("\n", 1)[0][:160])))
    add("")


def _places(events: list[Event], ranks_known: dict[tuple[Any, ...], int]) -> str:
    """Where a finding happened, per host: its ranks as ranges when every place of the host has
    one (so that the rank that is missing stands out: `ranks 0–5, 7`), else each place."""
    by_host: dict[str | None, list[Event]] = {}
    for event in events:
        by_host.setdefault(place(event)[0], []).append(event)
    parts: list[str] = []
    listed = 0
    for host, at_host in by_host.items():
        ranks = sorted({ranks_known[place(e)] for e in at_host if place(e) in ranks_known})
        if len(ranks) == len(at_host):
            label = "rank" if len(ranks) == 1 else "ranks"
            parts.append(f"{shown(host) + ' ' if host else ''}{label} {_ranges(ranks)}")
            continue
        for event in at_host:
            if listed < _PLACES_SHOWN:
                parts.append(_where(event))
            listed += 1
    more = f" and {listed - _PLACES_SHOWN} more" if listed > _PLACES_SHOWN else ""
    return "; ".join(parts) + more


def _ranges(numbers: list[int]) -> str:
    """Sorted numbers as ranges: `0–5, 7`."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    pieces: list[str] = []
    for low, high in runs:
        if high - low >= 2:
            pieces.append(f"{low}–{high}")
        else:  # two neighbours read better as a list than as a range
            pieces.extend(str(number) for number in range(low, high + 1))
    return ", ".join(pieces)


def _where(event: Event) -> str:
    return shown(_place_of(event))


def _place_of(event: Event) -> str:
    host, device, pid, _ = place(event)
    rank = event.rank
    parts = []
    if host:
        parts.append(host)
    if device is not None:
        parts.append(f"device {device}")
    if pid is not None:
        name = f" ({event.process_name})" if event.process_name else ""
        parts.append(f"pid {pid}{name}")
    if rank is not None:
        parts.append(f"rank {rank}")
    return ", ".join(parts) or (event.source.path if event.source else "?") or "?"


def _error_codes(result: ScanResult, zone: tzinfo, palette: Palette, add: _Add) -> None:
    if not result.codes:
        return
    add(palette.bold(f"Error codes ({len(result.codes)})"))
    add(f"  {'CODE':7} {'COUNT':>6}  {'FIRST':23}  {'LAST':23}  PROCESSES / DEVICES")
    for stats in sorted(result.codes.values(), key=lambda s: (s.first_us or 0, s.code)):
        processes = _code_processes(stats.sorted_processes(), result.collection)
        devices = _join(str(device) for device in sorted(stats.devices))
        code = palette.level(
            "ERROR" if stats.code[0] == "E" else "WARNING", f"{shown(stats.code):7}"
        )
        add(
            f"  {code} {stats.count:>6}  {format_datetime(stats.first_us, zone):23}  "
            f"{format_datetime(stats.last_us, zone):23}  {shown(processes) or '-'}"
            + (f" / devices {devices}" if devices else "")
        )
    add("")


def _code_processes(processes: list[tuple[str | None, int, str]], by_host: bool) -> str:
    """`3300(python3), 3301(python3)`; in a collection per host: `host-a 3300(python3); …`."""
    groups: dict[str | None, list[str]] = {}
    for host, pid, name in processes:
        groups.setdefault(host if by_host else None, []).append(
            f"{pid}({name})" if name else str(pid)
        )
    return "; ".join(
        (f"{host} " if host is not None else "") + _join(pids) for host, pids in groups.items()
    )


def _first_errors(result: ScanResult, zone: tzinfo, palette: Palette, add: _Add) -> None:
    if not result.first_errors:
        return
    ordered = sorted(result.first_errors, key=lambda e: (e.timestamp_us is None, e.timestamp_us))
    add(palette.bold(f"First ERROR of each process ({len(ordered)}), earliest first"))
    for error in ordered:
        who = f"pid {error.pid}" if error.pid is not None else "no pid"
        if error.process_name:
            who += f" ({error.process_name})"
        if result.collection and error.host is not None:
            who = f"{error.host}, {who}"
        add(
            palette.bold(f"── {format_datetime(error.timestamp_us, zone)}  {shown(who)}  ")
            + f"{shown(str(error.path))}:{error.line_number}"
        )
        if error.context:
            count = len(error.context)
            add(palette.dim(f"   {count} line{'s' if count != 1 else ''} before it:"))
            for line in error.context:
                add(palette.dim(f"   {shown(line)}"))
        for line in error.original.split("\n"):
            add("   " + palette.level("ERROR", shown(line)))
        add("")


def _processes(result: ScanResult, zone: tzinfo, palette: Palette, add: _Add) -> None:
    processes = result.sorted_processes()
    if not processes:
        return
    add(palette.bold(f"Processes ({len(processes)})"))
    listed = processes[:_MAX_PROCESSES_LISTED]
    width = min(max(4, *(len(shown(p.host or "-")) for p in listed)), _HOST_COLUMN)
    host_header = f"{'HOST':{width}}  " if result.collection else ""
    add(f"  {host_header}{'PID':>8}  {'NAME':20} {'RECORDS':>8} {'ERRORS':>7}  {'FIRST':23}  LAST")
    for process in listed:
        errors = str(process.errors)
        if process.errors:
            errors = palette.level("ERROR", f"{process.errors:>7}")
        else:
            errors = f"{errors:>7}"
        host = f"{shown(process.host or '-')[:width]:{width}}  " if result.collection else ""
        add(
            f"  {host}{process.pid if process.pid is not None else '-':>8}  "
            f"{shown(process.name or '-')[:20]:20} {process.records:>8} {errors}  "
            f"{format_datetime(process.first_us, zone):23}  "
            f"{format_datetime(process.last_us, zone)}"
        )
    if len(processes) > _MAX_PROCESSES_LISTED:
        add(f"  … and {len(processes) - _MAX_PROCESSES_LISTED} more (see --json)")
    add("")


def _counts(
    counter: Counter[str], palette: Palette, limit: int | None = None, levels: bool = False
) -> str:
    items = counter.most_common(limit)
    text = "  ".join(
        (palette.level(name, f"{shown(name)} {count}") if levels else f"{shown(name)} {count}")
        for name, count in items
    )
    hidden = len(counter) - len(items)
    return text + (f"  (+{hidden} more)" if hidden > 0 else "")


def _join(parts: Iterable[str]) -> str:
    return ", ".join(parts)
