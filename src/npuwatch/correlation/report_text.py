"""Incidents as people read them at the top of a scan report."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from datetime import tzinfo

from npuwatch.correlation.incident import Incident, Place
from npuwatch.terminal import Palette, format_datetime, visible_line

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
            _field(add, "victims", f"{incident.victim_count}: {_victims(incident)}")
        if incident.unheard:
            _field(add, "no logs", ", ".join(p.label() for p in incident.unheard[:8]))
        for evidence in incident.evidence[:_EVIDENCE_SHOWN]:
            # (an agent's evidence has the line's byte offset: it does not count lines)
            where = evidence._replace(file=_relative(evidence.file, root)).place()
            _field(add, "evidence", where, palette.dim)
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
    # (never inside a word: a path cut in two cannot be copied)
    wrapped = textwrap.wrap(
        visible_line(text), 92, break_long_words=False, break_on_hyphens=False
    ) or [""]
    add(f"  {label:<11} {style(wrapped[0])}")
    for line in wrapped[1:]:
        add(_INDENT + style(line))


def _place(place: Place) -> str:
    label = place.label()
    if place.communicator and place.rank is not None:
        label += f" in {place.communicator}"
    return label


_VICTIMS_NAMED = 8


def _victims(incident: Incident) -> str:
    """Counted by host; where no victim's host is known (one folder of logs, not a host's),
    the victims themselves: "- 1" said nothing."""
    counts = incident.victims_by_host()
    if set(counts) == {"-"} and incident.victims:
        named = [place.label() for place in incident.victims[:_VICTIMS_NAMED]]
        more = incident.victim_count - len(named)
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")
    return ", ".join(f"{'host unknown' if host == '-' else host} {n}" for host, n in counts.items())


def _chain(chain: list[Place]) -> str:
    labels = [place.label() for place in chain]
    if len(labels) > _CHAIN_SHOWN:
        labels = [*labels[:2], f"… {len(labels) - 4} more …", *labels[-2:]]
    return " -> ".join(labels)


def _relative(path: str | None, root: str | None) -> str | None:
    if path is None or root is None:
        return path
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path


def _code(incident: Incident) -> str:
    code = incident.faultdiag_code
    return "" if code is None else f"FaultDiag {code}, "
