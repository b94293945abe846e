"""`npuwatch correlate --once` and `npuwatch incident list|show` against a real node, on what
real agents shipped of a bundled two-host collection: the incident `scan` finds, written once
(a second round writes nothing), listed, and shown as `scan` prints it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.parsers.hccl.shipped import TOPOLOGY_STREAM
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import events_stream, state_index
from tests.cluster.fixture_hosts import (
    COLLECTION,
    collective_rows,
    journal_hosts,
    journaled_states,
)
from tests.npuwatch_command import run_npuwatch
from tests.opensearch_node.launcher import RunningNode

pytestmark = pytest.mark.integration

NAMESPACE = "commands"


@pytest.fixture(scope="module")
def shipped(
    node: RunningNode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, SearchEngine]]:
    """The collection journaled and shipped by one agent a host; the configuration the
    commands read, and a client of the node."""
    work = tmp_path_factory.mktemp("incident-commands")
    sink = (
        f'[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\nhosts = ["{node.url}"]\n'
        f'namespace = "{NAMESPACE}"\nmax_backoff = "1s"\n[collective]\nheartbeat_interval = "1s"\n'
    )
    config = work / "correlator.toml"
    config.write_text(sink + '[correlate]\nlisten = "127.0.0.1:0"\n', "utf-8")
    done = run_npuwatch("es", "setup", "--replicas", "0", "--config", str(config))
    assert done.returncode == 0, done.stderr  # (a warning: this node has no lifecycle plugin)
    engine = connect(Connection("opensearch", (node.url,)))

    def in_the_engine(host: str, state: Path) -> bool:
        states = journaled_states(state)  # its process documents and its heartbeat
        topology = state_index(TOPOLOGY_STREAM, NAMESPACE)
        on_host = {"term": {"host.name": host}}
        events = {"bool": {"filter": [on_host, {"exists": {"field": "ascend.collective.kind"}}]}}
        return engine.count(topology, on_host) == states and engine.count(
            events_stream(NAMESPACE), events
        ) == len(collective_rows(state))

    try:
        journal_hosts(work, sink, shipped=in_the_engine)
        yield config, engine
    finally:
        engine.client.indices.delete(index=f"logs-ascend.*-{NAMESPACE}", ignore=[404])
        engine.client.indices.delete_data_stream(name=f"logs-ascend.*-{NAMESPACE}", ignore=[404])
        engine.close()


def lines_about_the_root_cause(text: str) -> list[str]:
    keep = ("  root cause", "  why", "  waiting", "  victims")
    return [line for line in text.splitlines() if line.startswith(keep)]


def test_once_lists_and_shows_the_incident_scan_finds(shipped: tuple[Path, SearchEngine]) -> None:
    """The logs are a year old (a backfill): the incident is listed by when it was found, and
    `correlate --once` forgets none of the topology the agents shipped moments ago."""
    config, engine = shipped
    topology = state_index(TOPOLOGY_STREAM, NAMESPACE)
    shipped_topology = engine.count(topology)
    once = run_npuwatch("correlate", "--once", "--config", str(config), "--json")
    assert once.returncode == 1, once.stderr  # an incident
    (written,) = json.loads(once.stdout)["incidents"]
    assert [(p["host"], p["rank"]) for p in written["root_cause"]] == [("host-b", 5)]
    assert written["victims_count"] == 7

    listed = run_npuwatch("incident", "list", "--config", str(config), "--json")  # the last 24 h
    assert listed.returncode == 0, listed.stderr
    (incident,) = json.loads(listed.stdout)["incidents"]
    id_ = incident["id"]
    assert incident["revisions"] == written["revisions"]
    assert incident["first"].startswith("2025-12")  # the fault's time, by the logs
    for options in ((), ("--open",), ("--since", "1h", "--open")):
        text = run_npuwatch("incident", "list", *options, "--config", str(config))
        (line,) = text.stdout.splitlines()
        assert id_ in line and "host-b" in line and "fault 2025-12" in line, (options, line)
    engine.refresh(topology)
    assert engine.count(topology) == shipped_topology

    shown = run_npuwatch("incident", "show", id_, "--config", str(config), "--timezone", "UTC")
    assert shown.returncode == 0, shown.stderr
    scan = run_npuwatch("scan", str(COLLECTION), "--no-rules", "--timezone", "UTC")
    assert scan.returncode == 1, scan.stderr
    assert lines_about_the_root_cause(shown.stdout) == lines_about_the_root_cause(scan.stdout)
    assert lines_about_the_root_cause(shown.stdout)[0].startswith("  root cause  host-b dev 1")

    again = run_npuwatch("correlate", "--once", "--config", str(config), "--json")
    assert again.returncode == 1, again.stderr
    (same,) = json.loads(again.stdout)["incidents"]
    assert same["id"] == id_ and same["revisions"] == written["revisions"]
    index = state_index("incidents", NAMESPACE)
    assert engine.count(index) == 1
    engine.refresh(topology)
    assert engine.count(topology) == shipped_topology


def test_an_unknown_incident_and_an_unreachable_engine_are_one_line_each(
    shipped: tuple[Path, SearchEngine], tmp_path: Path
) -> None:
    config, _ = shipped
    missing = run_npuwatch("incident", "show", "no-such-id", "--config", str(config))
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"npuwatch: no incident no-such-id in {state_index('incidents', NAMESPACE)} "
        "(npuwatch incident list)"
    ]

    nowhere = tmp_path / "nowhere.toml"
    nowhere.write_text(
        '[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\n'
        'hosts = ["http://127.0.0.1:9"]\ntimeout = "2s"\n',
        "utf-8",
    )
    for args in (("correlate", "--once"), ("incident", "list"), ("incident", "show", "x")):
        done = run_npuwatch(*args, "--config", str(nowhere))
        assert done.returncode == 2, (args, done.stderr)
        (said,) = done.stderr.splitlines()
        assert said.startswith("npuwatch: cannot ") and "http://127.0.0.1:9" in said
