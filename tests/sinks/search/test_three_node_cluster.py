"""The real agents shipping into a real three-node OpenSearch cluster whose indices have one
replica, while nodes are killed (SIGKILL) and started again on their data: afterwards every
record, event and topology document is in the cluster exactly once, counted by where each came
from (host, file, byte offset) and by id, and `npuwatch correlate` finds the incident that a
single node finds in the same journals.

Two agents ship at once, each its host's generated plog tree (known lines and rule events) and
its host's folder of a collective failure: host-a lists node-0's URL alone (as behind a load
balancer), host-b all three, node-0's first. Their logs grow in three parts; while the agents
ship the second, the elected cluster manager (not node-0, the node of both agents' first URL)
is killed; while they ship the third, node-0 is (host-b goes on through the others, host-a waits
for it). Each is started again a few seconds later. `npuwatch es setup --replicas 1` installs the
templates; the test then raises the data streams' shards to 3 (`es setup` has no option for
shards), so that every node holds copies of every stream written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest
from opensearchpy.exceptions import TransportError

from npuwatch.journal.reader import JournalReader, Position
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import (
    events_stream,
    events_template_name,
    state_index,
    template_name,
)
from npuwatch.sinks.search.templates import events_template, index_template
from npuwatch.vocabulary import LEVEL_RANKS
from tests.cluster.fixture_hosts import COLLECTION
from tests.opensearch_node.cluster import QUICK_START_JVM_OPTS, RunningCluster, start_cluster
from tests.opensearch_node.launcher import RunningNode
from tests.real_servers import real_server
from tests.sinks.search.conftest import install_template, journal_counts, make_shipper, ship_all

pytestmark = pytest.mark.integration

HOSTS = ("host-a", "host-b")
PIDS = (4100, 4101, 4102)
PARTS = (slice(0, 600), slice(600, 1500), slice(1500, 2400))
"""The lines of each file written before the agents start, and the two parts written once the
part before is in the cluster (a node is killed while the agents ship each of those)."""
LINES = int(PARTS[-1].stop)
ERROR_EVERY = 600
STEP_MS = 120
"""ERROR lines 72 s of log time apart, beyond the rule's dedupe window (60 s): each is a rule
event of its own, and each process's first is a collective event too."""
SHARDS = 3
BATCH = 200
"""Documents in a bulk request of the agents: small, so that many are in flight."""
WAIT_S = 90.0
DOWN_S = 3.0
"""How long the node killed stays down before it is started again (which takes 6–11 s more)."""
Key = tuple[str, str, Any]
"""Where a document came from: host, file, byte offset."""


def plog_line(pid: int, number: int) -> str:
    level, text = (
        ("ERROR", "notify wait timeout") if number % ERROR_EVERY == 0 else ("INFO", "step")
    )
    minute, milli = divmod(number * STEP_MS, 60_000)
    return (
        f"[{level}] HCCL({pid},python3):2025-09-14-09:{minute:02d}:{milli // 1000:02d}."
        f"{milli % 1000:03d}.000 [hccl.cc:42] [{pid}] {text} {number}"
    )


class Host:
    """An agent's host: its generated tree (where each line is, which are ERROR lines) and its
    share of the collection; its configuration and state."""

    def __init__(self, name: str, work: Path) -> None:
        self.name = name
        self.work = work
        work.mkdir(parents=True)
        self.lines: set[Key] = set()
        self.errors: set[Key] = set()
        self.files: dict[Path, list[bytes]] = {}
        for pid in PIDS:
            path = work / "logs" / "debug" / "plog" / f"plog-{pid}_20250914090000000.log"
            self.files[path] = [(plog_line(pid, n) + "\n").encode() for n in range(LINES)]
            offset = 0
            for number, line in enumerate(self.files[path]):
                self.lines.add((name, str(path), offset))
                if number % ERROR_EVERY == 0:
                    self.errors.add((name, str(path), offset))
                offset += len(line)
        clock = LocalClock(timezone.utc)
        self.collection = COLLECTION / name / "ascend" / "log"
        self.records: int = len(self.lines) + sum(
            len(parse_bytes(path.read_bytes(), clock, str(path), name))
            for path in self.collection.rglob("*.log")
        )

    def records_before(self, part: slice) -> int:
        """Its records in the cluster once every line before `part` is (and the collection)."""
        return self.records - len(PIDS) * (LINES - int(part.start))

    def records_with(self, part: slice) -> int:
        """Its records in the cluster once `part` is too."""
        return self.records - len(PIDS) * (LINES - int(part.stop))

    def write(self, lines: slice) -> None:
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as out:
                out.write(b"".join(text[lines]))

    @property
    def journal(self) -> Path:
        return self.work / "state" / "journal"

    def config(self, urls: list[str], namespace: str, name: str = "npuwatch.toml") -> Path:
        config = self.work / name
        roots = [str(self.work / "logs"), str(self.collection)]
        config.write_text(
            f"""
[agent]
state_directory = "{self.work / "state"}"
host_name = "{self.name}"
timezone = "UTC"
[sources]
roots = {json.dumps(roots)}
idle_flush = "500ms"
[devices]
enabled = false
[sinks.elasticsearch]
enabled = true
flavour = "opensearch"
hosts = {json.dumps(urls)}
namespace = "{namespace}"
batch_documents = {BATCH}
max_backoff = "1s"
[sinks.prometheus]
listen = "127.0.0.1:0"
[correlate]
listen = "127.0.0.1:0"
""",
            encoding="utf-8",
        )
        return config


def npuwatch(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "npuwatch", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def start_agent(config: Path, said: Path) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if key != "NOTIFY_SOCKET"}
    command = [sys.executable, "-m", "npuwatch", "agent", "--config", str(config)]
    with said.open("ab") as stderr:
        return subprocess.Popen(command, env=env, stderr=stderr)


def stop(agents: list[subprocess.Popen[bytes]]) -> list[int]:
    for agent in agents:
        agent.send_signal(signal.SIGTERM)
    for agent in agents:
        try:
            agent.wait(timeout=60)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
    return [agent.returncode for agent in agents]


@pytest.fixture(scope="module")
@real_server("a three-node OpenSearch cluster (Java, tests/opensearch_node)")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("three-nodes"), jvm_opts=QUICK_START_JVM_OPTS)
    try:
        yield cluster
    finally:
        cluster.stop()


def records_of(namespace: str) -> str:
    return f"logs-ascend.plog-{namespace},logs-ascend.device-{namespace}"


def counted(engine: SearchEngine, index: str, query: dict[str, Any]) -> int | None:
    """The documents of `index` that match, refreshed; None unless every shard answered (a
    node has just died and its shards are being promoted, or it has just come back)."""
    try:
        engine.refresh(index)
        answer = engine.client.count(index=index, body={"query": query}, ignore_unavailable=True)
    except TransportError:  # (opensearch-py's ConnectionError too)
        return None
    shards = answer["_shards"]
    return int(answer["count"]) if shards["successful"] == shards["total"] else None


def in_cluster(engine: SearchEngine, namespace: str, host: str) -> tuple[int, int] | None:
    """The host's records and events in the cluster; None when it cannot be said now."""
    on_host = {"term": {"host.name": host}}
    records = counted(engine, records_of(namespace), on_host)
    events = counted(engine, events_stream(namespace), on_host)
    return None if records is None or events is None else (records, events)


def records_by_host(engine: SearchEngine, namespace: str) -> dict[str, int]:
    """Each host's records in the cluster, asked again until every shard answers."""
    deadline = time.monotonic() + WAIT_S
    body = {"size": 0, "aggs": {"h": {"terms": {"field": "host.name", "size": 10}}}}
    while True:
        try:
            engine.refresh(records_of(namespace))
            answer = engine.client.search(
                index=records_of(namespace), body=body, ignore_unavailable=True
            )
        except TransportError:  # (opensearch-py's ConnectionError too)
            answer = {"_shards": {"total": 1, "successful": 0}}
        shards = answer["_shards"]
        if shards["total"] == 0:  # no stream made yet
            return {}
        if shards["successful"] == shards["total"]:
            return {b["key"]: b["doc_count"] for b in answer["aggregations"]["h"]["buckets"]}
        assert time.monotonic() < deadline, "the cluster did not answer counts"
        time.sleep(0.1)


@dataclass
class Death:
    """A node killed while the agents shipped, and started again."""

    node: str
    copies: int
    """Shard copies of the plog stream the node held when it was killed."""
    shipped_while_down: dict[str, int]
    """Each host's records that arrived while it was down (from just after the kill: a bulk
    request in flight may still land)."""


def kill_while_shipping(
    cluster: RunningCluster,
    engine: SearchEngine,
    namespace: str,
    hosts: list[Host],
    part: slice,
    victim: RunningNode,
) -> Death:
    """Once every line before `part` is in, write `part`; kill `victim` as soon as both agents
    ship from it; start it again DOWN_S later, and wait until the cluster is green."""
    deadline = time.monotonic() + WAIT_S
    before = {host.name: host.records_before(part) for host in hosts}
    while records_by_host(engine, namespace) != before:
        assert time.monotonic() < deadline, f"not shipped: {records_by_host(engine, namespace)}"
        time.sleep(0.2)
    for host in hosts:
        host.write(part)
    while not all(n > before[h] for h, n in records_by_host(engine, namespace).items()):
        assert time.monotonic() < deadline, "the agents did not ship what was written"
    name = cluster.name_of(victim)
    shards = cluster.request(f"/_cat/shards/logs-ascend.plog-{namespace}?format=json")
    victim.kill()
    killed = time.monotonic()
    at_kill = records_by_host(engine, namespace)
    assert all(at_kill[h.name] < h.records_with(part) for h in hosts), at_kill  # shipping
    time.sleep(max(0.0, killed + DOWN_S - time.monotonic()))
    while_down = records_by_host(engine, namespace)
    victim.start_again()
    cluster.wait_for("green")
    return Death(
        name,
        sum(1 for copy in shards if copy["node"] == name),
        {host: while_down[host] - at_kill[host] for host in at_kill},
    )


@dataclass
class Shipment:
    """The agents' shipping through the deaths of two nodes, and what they journaled."""

    namespace: str
    engine: SearchEngine
    hosts: list[Host]
    configs: list[Path]
    manager_death: Death
    first_url_death: Death
    said: list[str]


NAMESPACE = "threenodes"


@pytest.fixture(scope="module")
def shipment(
    three_nodes: RunningCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Shipment]:
    cluster = three_nodes
    work = tmp_path_factory.mktemp(NAMESPACE)
    hosts = [Host(name, work / name) for name in HOSTS]
    urls = cluster.urls
    configs = [hosts[0].config(urls[:1], NAMESPACE), hosts[1].config(urls, NAMESPACE)]
    setup = npuwatch("es", "setup", "--config", str(configs[1]))  # --replicas 1: the default
    assert setup.returncode == 0, setup.stdout + setup.stderr
    engine = connect(Connection("opensearch", tuple(urls), timeout_s=20))
    said = [host.work / "agent.log" for host in hosts]
    agents: list[subprocess.Popen[bytes]] = []
    try:
        for name, template in (
            (template_name(NAMESPACE), index_template(NAMESPACE, "opensearch")),
            (events_template_name(NAMESPACE), events_template(NAMESPACE, "opensearch")),
        ):
            template["template"]["settings"]["number_of_shards"] = SHARDS
            engine.put_index_template(name, template)
        for host in hosts:
            host.write(PARTS[0])
        agents = [start_agent(config, log) for config, log in zip(configs, said, strict=True)]
        first = cluster.nodes[0]
        deaths: list[Death] = []
        for part in PARTS[1:]:
            cluster.elect_another_cluster_manager(first)
            victim = cluster.cluster_manager() if not deaths else first
            deaths.append(kill_while_shipping(cluster, engine, NAMESPACE, hosts, part, victim))
        deadline = time.monotonic() + WAIT_S
        journals: list[tuple[int, int]] = []
        counts: list[tuple[int, int] | None] = []
        while journals != counts or [c[0] for c in journals] != [h.records for h in hosts]:
            assert time.monotonic() < deadline, (journals, counts)
            time.sleep(0.5)
            journals = [journal_counts(host.journal) for host in hosts]
            counts = [in_cluster(engine, NAMESPACE, host.name) for host in hosts]
        assert stop(agents) == [0] * len(agents)
        manager_death, first_url_death = deaths
        yield Shipment(
            NAMESPACE,
            engine,
            hosts,
            configs,
            manager_death,
            first_url_death,
            [path.read_text("utf-8") for path in said],
        )
    finally:
        stop(agents)
        engine.client.indices.delete_data_stream(name=f"logs-ascend.*-{NAMESPACE}", ignore=[404])
        engine.client.indices.delete(index=f"logs-ascend.*-{NAMESPACE}", ignore=[404])
        engine.close()


def keys_in(engine: SearchEngine, index: str) -> Counter[Key]:
    """How many documents of `index` came from each (host, file, byte offset)."""
    found: Counter[Key] = Counter()
    sources = [
        {name: {"terms": {"field": path, "missing_bucket": True}}}
        for name, path in (("h", "host.name"), ("f", "log.file.path"), ("o", "log.offset"))
    ]
    composite: dict[str, Any] = {"size": 10_000, "sources": sources}
    while True:
        answer = engine.client.search(
            index=index,
            body={"size": 0, "aggs": {"k": {"composite": composite}}},
            ignore_unavailable=True,
        )["aggregations"]["k"]
        found.update(
            {
                (b["key"]["h"], b["key"]["f"], b["key"]["o"]): b["doc_count"]
                for b in answer["buckets"]
            }
        )
        if not answer["buckets"] or "after_key" not in answer:
            return found
        composite["after"] = answer["after_key"]


def ids_in(engine: SearchEngine, index: str) -> Counter[str]:
    engine.refresh(index)
    hits = engine.search(index, {"size": 10_000, "_source": False, "query": {"match_all": {}}})
    return Counter(hit["_id"] for hit in hits)


def journaled_ids(journal: Path) -> tuple[list[str], list[str]]:
    """The ids of the events and of the latest states a journal holds."""
    events: list[str] = []
    with JournalReader(journal) as reader:
        position = Position()
        while rows := reader.event_rows_after(position, 512):
            events.extend(id_ for _, id_, _ in rows)
            position = rows[-1][0]
        return events, list(reader.latest_states())


def test_while_the_cluster_manager_was_down_both_agents_went_on_shipping(
    shipment: Shipment,
) -> None:
    death = shipment.manager_death
    assert death.node != "node-0"
    assert death.copies >= 1
    assert all(shipped > 0 for shipped in death.shipped_while_down.values()), death


def test_while_node_0_was_down_host_b_went_on_and_host_a_waited_for_it(
    shipment: Shipment,
) -> None:
    """host-a lists node-0 alone: it ships nothing more (but the bulk request in flight, which
    may land) and says that it is retrying; host-b goes on through the other nodes."""
    death = shipment.first_url_death
    assert death.node == "node-0"
    assert death.copies >= 1
    assert death.shipped_while_down["host-a"] <= BATCH
    assert death.shipped_while_down["host-b"] > 0
    assert "shipping again after" in shipment.said[0]


def test_the_agents_log_no_error(shipment: Shipment) -> None:
    """An ERROR line from the agent means data loss or an operator action: neither here."""
    for said in shipment.said:
        assert "npuwatch: ERROR" not in said, said[-3000:]


def test_every_record_is_in_the_cluster_once(shipment: Shipment) -> None:
    keys = keys_in(shipment.engine, records_of(shipment.namespace))
    assert [key for key, count in keys.items() if count != 1] == []
    for host in shipment.hosts:
        mine = {key for key in keys if key[0] == host.name}
        assert len(mine) == host.records == journal_counts(host.journal)[0]
        assert host.lines <= mine
        assert all(key[2] is not None for key in mine)


def test_every_event_and_topology_document_is_in_the_cluster_once(shipment: Shipment) -> None:
    events, states = Counter[str](), Counter[str]()
    for host in shipment.hosts:
        journaled_events, journaled_states = journaled_ids(host.journal)
        events.update(journaled_events)
        states.update(journaled_states)
    engine, namespace = shipment.engine, shipment.namespace
    assert ids_in(engine, events_stream(namespace)) == events
    assert ids_in(engine, state_index("topology", namespace)) == states
    rule_events = engine.search(
        events_stream(namespace),
        {"size": 1000, "query": {"term": {"rule.id": "hccl.notify-wait-timeout"}}},
    )
    found = Counter(key_of(hit["_source"]) for hit in rule_events)
    assert found == Counter(set().union(*(host.errors for host in shipment.hosts)))


def key_of(document: dict[str, Any]) -> Key:
    return (document["host"]["name"], document["log"]["file"]["path"], document["log"]["offset"])


WALL_CLOCK = ("first_verdict", "updated", "revisions")
"""What an incident says of when the correlator decided it, not of the logs."""


def incidents(*configs: Path) -> list[list[dict[str, Any]]]:
    """`npuwatch correlate --once --json` with each configuration (at once): the incidents
    each found, without the times of the correlator's own decisions."""
    command = [sys.executable, "-m", "npuwatch", "correlate", "--once", "--json", "--config"]
    runs = [
        subprocess.Popen([*command, str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for config in configs
    ]
    found = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 1, err.decode()  # 1: incidents found
        found.append(
            [
                {key: value for key, value in incident.items() if key not in WALL_CLOCK}
                | {"revisions": [(r["changed"], r["provisional"]) for r in incident["revisions"]]}
                for incident in json.loads(out)["incidents"]
            ]
        )
    return found


def test_the_correlator_finds_the_incident_a_single_node_finds(
    shipment: Shipment, node: RunningNode, tmp_path: Path
) -> None:
    """The same journals shipped into one node (their events and states: what the correlator
    reads), and `npuwatch correlate --once` against each."""
    namespace = shipment.namespace + "one"
    engine = connect(Connection("opensearch", (node.url,)))
    install_template(engine, namespace)
    try:
        for host in shipment.hosts:
            shipper, _, _ = make_shipper(
                engine,
                host.journal,
                tmp_path / host.name,
                namespace,
                skipped_levels=frozenset(LEVEL_RANKS),
            )
            ship_all(shipper)
        engine.refresh(f"logs-ascend.*-{namespace}")
        one_node = shipment.hosts[0].config([node.url], namespace, "one-node.toml")
        on_three, on_one = incidents(shipment.configs[1], one_node)
    finally:
        engine.client.indices.delete_data_stream(name=f"logs-ascend.*-{namespace}", ignore=[404])
        engine.client.indices.delete(index=f"logs-ascend.*-{namespace}", ignore=[404])
        engine.close()
    assert [(i["kind"], i["victims_count"], i["provisional"]) for i in on_three] == [
        ("first_error_not_timeout", 7, False)
    ]
    assert on_three == on_one
