"""What a sink is: something that takes pages of the journal and says when it has them.

A sink only ships. The journal follower (sinks/follower.py) does everything else for every sink
alike: its cursor, reading the page after it, waiting for commits, pausing between tries, saving
the cursor, and stopping. A sink gets a page, delivers it (printing it, sending it), and returns
once every entry of it is done (delivered, already there, or set aside for good); until then
it asks the follower for a pause, which ends the delivery when the agent stops. The cursor
moves past a page only when its delivery returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

from npuwatch.handoff import StateRow
from npuwatch.journal.reader import Position
from npuwatch.journal.segment import StoredBlock
from npuwatch.metrics import SelfMetrics


@dataclass(frozen=True)
class Page:
    """Journal entries after a sink's cursor: blocks of records, events or states (one kind a
    page)."""

    blocks: list[tuple[Position, StoredBlock]] = field(default_factory=list)
    events: list[tuple[Position, str, str]] = field(default_factory=list)
    """(position, event id, JSON document) of each event."""
    states: list[tuple[Position, StateRow]] = field(default_factory=list)
    """Documents that replace the one of the same id (topology, heartbeats)."""


@dataclass(frozen=True)
class SinkTraits:
    """How the follower reads the journal for a sink."""

    reads_blocks: bool = True
    """False for a sink of events only: record blocks are not even read."""
    reads_states: bool = False
    """True for a sink that ships the states (the search engine's topology index)."""
    blocks_per_page: int = 16
    events_per_page: int = 256
    from_the_end: bool = False
    """On a first start (no cursor), begin at the journal's end: a console prints what comes
    from now on, a search engine wants everything the journal holds."""
    drains_at_stop: bool = False
    """At a stop, deliver everything committed before leaving, within the stop's time (a
    console prints it all, a search engine gets the documents the stop wrote), or leave at once
    and let the journal keep the backlog. A delivery that must be tried again ends the drain:
    the rest waits in the journal for the next start."""
    first_pause_s: float = 0.5
    max_pause_s: float = 30.0
    repeated_after_restart: str = "what was delivered since its last write is delivered again"
    """What a restart repeats when the cursor could not be saved, for the log line."""


class Pause(Protocol):
    """The follower's pause between two tries of a delivery."""

    def __call__(self, announce: Callable[[float], None] | None = None) -> None:
        """Wait a growing, jittered pause (`announce` is told its length first); raises
        StopDelivery when the agent stops meanwhile."""


class StopDelivery(Exception):
    """The agent stops while a page is still being tried: the cursor stays where it is."""


class Sink(Protocol):
    """One destination of the journal's entries, followed with a cursor of its own."""

    name: str
    """The cursor's name (in cursors.json), the thread's, and the metrics' `sink` label."""
    traits: SinkTraits

    def deliver(self, page: Page, pause: Pause) -> None:
        """Deliver every entry of `page`; call `pause` between tries until all are done."""


@dataclass(frozen=True)
class SinkContext:
    """What a sink's plan may use besides its section of the configuration."""

    environ: Mapping[str, str]
    host: str
    state_directory: Path
    console: TextIO | None = None
    """The agent's `--console` output, when it was asked for."""


@dataclass(frozen=True)
class SinkPlan:
    """A sink as the configuration makes it, checked and with its secrets read: `open` makes
    the runtime sink (it does no I/O until it delivers)."""

    name: str
    description: str
    open: Callable[[SelfMetrics], Sink]
