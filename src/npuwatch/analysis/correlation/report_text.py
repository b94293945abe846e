"""Incidents as people read them at the top of a scan report."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from datetime import tzinfo

from npuwatch.analysis.correlation.incident import Incident, Place
from npuwatch.sinks.console import format_datetime
from npuwatch.terminal import Palette, visible_line

_CHAIN_SHOWN = 6
_EVIDENCE_SHOWN = 6
_NOTES_SHOWN = 4


def render_incidents(
    incidents: list[Incident], zone: tzinfo, palette: Palette, root: str | None = None
) -> list[str]:
    lines: list[str] = []
    add = lines.append
    for number, incident in enumerate(incidents, 1):
        status = f" ({incident.status})" if incident.status else ""
        if incident.recovered and not incident.status:
            status = " (recovered)"
        add(
            palette.bold(f"Incident {number}{status}: ")
            + palette.level("ERROR", incident.kind.replace("_", " "))
            + f" at {format_datetime(incident.first_us, zone)}"
            + palette.dim(f"  [{_code(incident)}confidence {incident.confidence:.2f}]")
        )
        roots = ", ".join(_place(p) for p in incident.root_cause) or "not named (see why)"
        _field(add, "root cause", roots)
        _field(add, "why", incident.summary)
        if incident.waiting_chain:
            _field(add, "waiting", _chain(incident.waiting_chain))
        if incident.victim_count:
            counts = incident.victims_by_host().items()
            by_host = ", ".join(f"{host} {count}" for host, count in counts)
            _field(add, "victims", f"{incident.victim_count}: {by_host}")
        if incident.unheard:
            _field(add, "no logs", ", ".join(p.label() for p in incident.unheard[:8]))
        for evidence in incident.evidence[:_EVIDENCE_SHOWN]:
            line = "" if evidence.line is None else f":{evidence.line}"  # an agent's: no line
            _field(add, "evidence", f"{_relative(evidence.file, root)}{line}", palette.dim)
            add(_INDENT + visible_line(evidence.text[:150]))
        _field(add, "check first", incident.check_first)
        for note in incident.notes[:_NOTES_SHOWN]:
            _field(add, "note", note)
        add("")
    return lines


_INDENT = " " * 14


def _field(
    add: Callable[[str], None], label: str, text: str, style: Callable[[str], str] = str
) -> None:
    """`text` (which may hold host names, file names, log text: shown, not acted on, see
    terminal.py) after its label, wrapped; each line in `style`."""
    wrapped = textwrap.wrap(visible_line(text), 92) or [""]
    add(f"  {label:<11} {style(wrapped[0])}")
    for line in wrapped[1:]:
        add(_INDENT + style(line))


def _place(place: Place) -> str:
    label = place.label()
    if place.communicator and place.rank is not None:
        label += f" in {place.communicator}"
    return label


def _chain(chain: list[Place]) -> str:
    labels = [place.label() for place in chain]
    if len(labels) > _CHAIN_SHOWN:
        labels = [*labels[:2], f"… {len(labels) - 4} more …", *labels[-2:]]
    return " -> ".join(labels)


def _relative(path: str | None, root: str | None) -> str:
    if path is None:
        return "-"
    if root is None:
        return path
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path


def _code(incident: Incident) -> str:
    code = incident.faultdiag_code
    return "" if code is None else f"FaultDiag {code}, "
