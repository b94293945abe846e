"""Whole requests that fail, for both flavours, against the real node: the engine unreachable,
credentials refused, a size limit in front of it. The documents are not at fault, so none may
be dead-lettered, and everything arrives exactly once when the way is clear again.

The failures come from es_adapter's face (a local proxy in front of the node, as reverse
proxies stand in front of real clusters): closed and reopened on its port for the outage, and
with a gate that answers 401 or 413 for the refusals.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.cli import main
from npuwatch.sinks.search.engine import Connection, Flavour, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import all_streams
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import Journaled, install_template, make_shipper, ship_all
from tests.sinks.search.es_adapter import ElasticsearchFace, Gate

STREAMS = ",".join(all_streams("default"))
FLAVOURS: tuple[Flavour, ...] = ("elasticsearch", "opensearch")


class Refusals:
    """A gate that answers the first `times` bulk requests with `status`, then any bulk request
    larger than `max_bytes` with 413 (nginx's client_max_body_size)."""

    def __init__(self, status: int = 413, times: int = 0, max_bytes: int | None = None) -> None:
        self.status, self.left, self.max_bytes = status, times, max_bytes
        self.refused = 0
        self.largest_forwarded = 0
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, size: int) -> int | None:
        if not path.partition("?")[0].endswith("/_bulk"):
            return None
        with self._lock:
            if self.left > 0:
                self.left -= 1
                self.refused += 1
                return self.status
            if self.max_bytes is not None and size > self.max_bytes:
                self.refused += 1
                return 413
            self.largest_forwarded = max(self.largest_forwarded, size)
            return None


def through_face(
    flavour: Flavour, node: RunningNode, gate: Gate | None = None
) -> tuple[ElasticsearchFace, SearchEngine]:
    face = ElasticsearchFace(node.url, gate=gate)
    return face, connect(Connection(flavour, (face.url,), timeout_s=5))


@pytest.fixture
def template(engine: SearchEngine) -> Iterator[SearchEngine]:
    install_template(engine)
    yield engine


@pytest.mark.integration
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_an_unreachable_engine_is_waited_out_and_everything_arrives_once(
    flavour: Flavour,
    node: RunningNode,
    template: SearchEngine,
    hccl_journal: Journaled,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "npuwatch")
    face, engine = through_face(flavour, node)
    port = int(face.url.rsplit(":", 1)[1])
    reopened: list[ElasticsearchFace] = []
    try:
        shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
        shipper.pump()  # the first page arrives
        first_page = template.count(STREAMS)
        assert 0 < first_page < hccl_journal.records + hccl_journal.events
        face.close()  # nothing listens on the port now: connections are refused

        def reopen() -> None:
            threading.Event().wait(2)
            reopened.append(ElasticsearchFace(node.url, port=port))

        helper = threading.Thread(target=reopen)
        helper.start()
        ship_all(shipper)  # must retry, not raise, until the port answers again
        helper.join()
        assert template.count(STREAMS) == hccl_journal.records + hccl_journal.events
        assert metrics.value("npuwatch_ship_retries_total", {"sink": "elasticsearch"}) > 0
        assert dead.lines() == []
    finally:
        engine.close()
        for opened in reopened:
            opened.close()
    # Said once when it began and once when it ended, each a readable line: before, every
    # retry logged the client's nested exception, repeated, in 330 characters.
    said = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("npuwatch")
    ]
    began, ended = said
    assert began.startswith("elasticsearch: 50 of 50 documents not accepted yet (")
    assert "connection refused" in began and "Error(" not in began
    assert ended.startswith("elasticsearch: shipping again after ")


@pytest.mark.integration
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_refused_credentials_are_retried_never_dead_lettered(
    flavour: Flavour,
    node: RunningNode,
    template: SearchEngine,
    hccl_journal: Journaled,
    tmp_path: Path,
) -> None:
    """An expired API key renewed a little later: the documents wait for it."""
    gate = Refusals(status=401, times=3)
    face, engine = through_face(flavour, node, gate)
    try:
        shipper, metrics, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
        ship_all(shipper)
        assert gate.refused == 3
        assert template.count(STREAMS) == hccl_journal.records + hccl_journal.events
        assert dead.lines() == []
        assert metrics.value("npuwatch_dead_letters_total", {"sink": "elasticsearch"}) == 0
        assert metrics.value("npuwatch_ship_retries_total", {"sink": "elasticsearch"}) > 0
    finally:
        engine.close()
        face.close()


@pytest.mark.integration
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_size_limit_in_front_of_the_engine_makes_the_requests_smaller(
    flavour: Flavour,
    node: RunningNode,
    template: SearchEngine,
    hccl_journal: Journaled,
    tmp_path: Path,
) -> None:
    limit = 100 * 1024
    gate = Refusals(max_bytes=limit)
    face, engine = through_face(flavour, node, gate)
    try:
        shipper, _, dead = make_shipper(engine, hccl_journal.directory, tmp_path)
        ship_all(shipper)
        assert gate.refused > 0  # the sink's first requests were larger than the limit
        assert 0 < gate.largest_forwarded <= limit
        assert template.count(STREAMS) == hccl_journal.records + hccl_journal.events
        assert dead.lines() == []
    finally:
        engine.close()
        face.close()


@pytest.mark.integration
def test_es_check_with_a_key_that_may_only_write_says_so_in_lines_not_a_traceback(
    node: RunningNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent's own API key (create_doc, auto_configure) may not read templates or count."""

    def writer_only(method: str, path: str, size: int) -> int | None:
        return 403 if path.startswith("/_index_template") or "/_count" in path else None

    face = ElasticsearchFace(node.url, gate=writer_only)
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        f'[agent]\nstate_directory = "{tmp_path}"\n'
        f'[sinks.elasticsearch]\nenabled = true\nhosts = ["{face.url}"]\n',
        encoding="utf-8",
    )
    try:
        assert main(["es", "check", "--config", str(config)]) == 1
    finally:
        face.close()
    captured = capsys.readouterr()
    assert captured.out.startswith("connected: elasticsearch 2.19.6")
    refused = [line for line in captured.err.splitlines() if "HTTP 403" in line]
    # The three templates (logs, events, topology), and the count of each of the five data
    # streams.
    assert len(refused) == 8, captured.err
    assert all("run `npuwatch es setup|check` with an administrator's" in x for x in refused)
    assert "Traceback" not in captured.err
