"""The search-engine sink against a real OpenSearch node, on a journal whose middle segment is
damaged: every record and event of the intact segments is shipped once, what can still be read
of the damaged one too, and the follower reaches the journal's end instead of dying or looping."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.sinks.search.engine import SearchEngine
from npuwatch.sinks.search.streams import all_streams
from tests.journal.damaged_journal import (
    DAMAGES,
    PART_DAMAGES,
    damage_segment,
    lines_of,
    write_journal,
)
from tests.sinks.search.conftest import install_template, make_shipper, ship_all

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "damage",
    [
        "overwritten with garbage",
        "a FIFO",
        "blocks that decompress to garbage",
        "a page of its blocks",
    ],
)
def test_the_intact_segments_are_shipped_exactly_once_past_a_damaged_one(
    engine: SearchEngine, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    journal = tmp_path / "journal"
    contents = write_journal(journal)
    damaged = damage_segment(journal, 2, DAMAGES[damage])
    install_template(engine)
    shipper, _, dead = make_shipper(engine, journal, tmp_path)

    ship_all(shipper)
    ship_all(shipper)  # at the end: nothing more, nothing again
    shipper.close()

    engine.client.indices.refresh(index="logs-ascend.*")
    plog, device, profiling, debug, events = (engine.count(s) for s in all_streams("default"))
    assert plog + device == len(lines_of(contents, {1, 3}))
    # Damage to its blocks alone leaves the damaged segment's events to be shipped.
    segments = 3 if damage in PART_DAMAGES else 2
    assert events == segments * len(contents.events) // 3
    assert (profiling, debug) == (0, 0)
    assert not dead.path.exists()
    naming = [message for message in caplog.messages if str(damaged) in message]
    assert len(naming) == 1
