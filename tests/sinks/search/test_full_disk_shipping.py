"""The search-engine sink with its state on a real full disk (a 1 MiB tmpfs), against the real
OpenSearch node: the shipping thread lives, a refused document is kept once there is room
(never passed unkept), and the cursor is saved then; every document arrives exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.journal.cursors import CursorStore
from npuwatch.sinks.follower import Backoff
from npuwatch.sinks.search.documents import Action
from npuwatch.sinks.search.engine import SearchEngine
from npuwatch.sinks.search.search_sink import SearchSink
from npuwatch.sinks.search.streams import all_streams
from tests.agent.harness import wait_until
from tests.journal.full_disk import fill, small_tmpfs
from tests.sinks.search.conftest import Journaled, install_template, make_shipper

pytestmark = pytest.mark.integration

STREAMS = ",".join(all_streams("default"))


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


def test_a_refused_document_the_full_disk_cannot_keep_waits_and_is_kept_once_there_is_room(
    engine: SearchEngine, hccl_journal: Journaled, disk: Path
) -> None:
    install_template(engine)
    shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, disk / "state")
    stream = "logs-ascend.plog-default"
    good = [
        Action(f"good-{n}", stream, {"@timestamp": "2025-09-14T09:30:00Z", "message": f"m{n}"})
        for n in range(4)
    ]
    bad = Action(
        "bad-0",
        stream,
        {"@timestamp": "2025-09-14T09:30:00Z", "message": "x", "log": {"offset": "not a number"}},
    )
    filler = fill(disk)
    pause = Backoff(threading.Event(), 0.2, 1)
    sink = shipper.sink
    assert isinstance(sink, SearchSink)
    shipping = threading.Thread(target=sink.ship, args=([*good[:2], bad, *good[2:]], pause))
    shipping.start()
    try:
        retried = {"sink": "elasticsearch"}
        wait_until(lambda: metrics.value("npuwatch_ship_retries_total", retried) >= 3, 30)
        assert shipping.is_alive()  # the page is not done: its refused document is kept nowhere
        assert engine.count(stream) == 4
        assert dead.lines() == []
        filler.unlink()
        shipping.join(30)
        assert not shipping.is_alive()
    finally:
        filler.unlink(missing_ok=True)
        shipping.join(30)
    letters = dead.lines()
    assert [(letter["id"], letter["status"]) for letter in letters] == [("bad-0", 400)]
    assert metrics.value("npuwatch_dead_letters_total", {"sink": "elasticsearch"}) == 1
    labels = {"sink": "elasticsearch", "result": "dead_letter"}
    assert metrics.value("npuwatch_shipped_total", labels) == 1
    assert engine.count(stream) == 4


def test_a_full_disk_under_the_cursor_file_stops_no_shipping_and_the_cursor_is_saved_later(
    engine: SearchEngine, hccl_journal: Journaled, disk: Path
) -> None:
    install_template(engine)
    state = disk / "state"
    state.mkdir()
    filler = fill(disk)
    stop = threading.Event()
    shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, state, stop=stop)
    total = hccl_journal.records + hccl_journal.events
    shipper.start()
    try:
        wait_until(lambda: engine.count(STREAMS) == total, 120)
        threading.Event().wait(2)  # two more rounds of the cursor's save, both refused
        assert shipper.thread.is_alive()
        assert not (state / "cursors.json").exists()
        assert sorted(p.name for p in disk.rglob("*.tmp")) == []
        filler.unlink()
        wait_until(lambda: CursorStore(state / "cursors.json").get("elasticsearch") is not None)
        assert CursorStore(state / "cursors.json").get("elasticsearch") == shipper.cursor
    finally:
        filler.unlink(missing_ok=True)
        stop.set()
        shipper.thread.join(30)
    assert not shipper.thread.is_alive()
    ok = {"sink": "elasticsearch", "result": "ok"}
    assert metrics.value("npuwatch_shipped_total", ok) == total + hccl_journal.states
    assert dead.lines() == []
    # From the saved cursor, a new sink has nothing left to send.
    again, again_metrics, _ = make_shipper(engine, hccl_journal.directory, state)
    assert not again.pump()
    again.close()
    assert engine.count(STREAMS) == total
    duplicates = {"sink": "elasticsearch", "result": "duplicate"}
    assert again_metrics.value("npuwatch_shipped_total", duplicates) == 0
