"""What the agents' heartbeats say of the places an incident names.

A root cause or a peer without logs is either alive and silent — its agent beats, its process
wrote nothing since some time: a hang, which is the fault — or unknown: no heartbeat from its
host, so its agent is down or cut off and the logs that would say more are missing. The offline
engine cannot tell them apart; the live correlator can, and says so in the incident.
"""

from __future__ import annotations

from npuwatch.cluster.feed import CorrelationInput
from npuwatch.correlation.incident import Incident, Place
from npuwatch.records import format_timestamp


def liveness_notes(incident: Incident, fed: CorrelationInput, now_us: int) -> list[str]:
    """A line for each root-cause place and peer without logs whose host is known."""
    notes: list[str] = []
    for place in [*incident.root_cause, *incident.unheard]:
        note = _note(place, fed, now_us)
        if note is not None and note not in notes:
            notes.append(note)
    return notes


def _note(place: Place, fed: CorrelationInput, now_us: int) -> str | None:
    host = place.host
    if not host:
        return None
    alive = fed.alive(host, now_us)
    if alive is None:
        return f"{host}: no heartbeat from its agent: its logs may be missing, not silent"
    beat = fed.heartbeats[host]
    if not alive:
        silent = (now_us - beat.clock_us) // 60_000_000
        return f"{host}: its agent's last heartbeat was {silent} min ago: down or cut off"
    if place.pid is None:
        return f"{host}: its agent is alive; no process of this device is known there"
    newest = beat.processes.get(place.pid)
    if newest is None:
        return (
            f"{host}: its agent is alive; pid {place.pid} is not among the processes it saw writing"
        )
    return (
        f"{host}: its agent is alive; pid {place.pid} wrote its last line at "
        f"{format_timestamp(newest)}"
    )
