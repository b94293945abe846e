"""Ingest rate into a three-node OpenSearch cluster with one replica, and into one node.

    python bench/cluster_ingest_bench.py [--lines 50000] [--shippers 1,4] [--bulk 2000]

The journal of bench/ship_bench.py (its build_journal: a generated tree in the real CANN
formats, followed by the real agent; kept in --work and built again only when missing) is
shipped by the search sink, as the agent ships it, into one node with no replica, then into
three nodes with one replica (each shipper's client given every node's URL, as an agent listing
them all). One shipper is one agent draining a backlog, one bulk request at a time; several
ship at once, each into a namespace of its own (the journal's record ids are the same for
every shipper), as many agents do. Each node is a JVM of tests/opensearch_node with a 384 MB
heap; the three share this machine's two cores with each other and with the shippers, so the
cluster's rate here is what the same cores index twice over (every document is written on a
primary and on its replica), not what three machines would. Every namespace's data streams are
made (`es setup`, then created empty) before the clock starts. Printed: documents/s and MB/s
of JSON, the CPU the nodes and the shippers spent (from /proc) per 1,000 documents, how busy the
whole machine was meanwhile (other work on it included), and the bytes on disk a document.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.opensearch_node.cluster import CLUSTER_JVM_OPTS, start_cluster
from tests.opensearch_node.launcher import RunningNode, start_node

from agent_bench import sample
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.journal.cursors import CursorStore
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.follower import JournalFollower
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink, ShipSettings
from npuwatch.sinks.search.streams import STATE_INDICES, all_streams, state_index
from ship_bench import build_journal, documents_alone, es_setup


def make_streams(engine: SearchEngine, urls: list[str], namespace: str, replicas: int) -> None:
    """`es setup --replicas N` for the namespace, and every data stream and plain index of it
    made, so that the shipping measured does not create indices."""
    hosts = [option for url in urls for option in ("--host", url)]
    es_setup(
        "--replicas", str(replicas), "--flavour", "opensearch", *hosts, "--namespace", namespace
    )
    for stream in all_streams(namespace):
        engine.client.indices.create_data_stream(name=stream)
    for name in STATE_INDICES:
        engine.client.indices.create(index=state_index(name, namespace))
    engine.client.cluster.health(index=f"logs-ascend.*-{namespace}", wait_for_status="green")


def ship_at_once(
    urls: list[str], journal: Path, work: Path, namespaces: list[str], bulk: int
) -> tuple[float, float]:
    """The journal shipped into each namespace by a sink of its own, all at once (a thread
    each, started together); the seconds until the last is done, and the CPU seconds of this
    process meanwhile."""
    followers, engines = [], []
    for namespace in namespaces:
        state = work / f"ship-{namespace}"
        shutil.rmtree(state, ignore_errors=True)
        metrics = SelfMetrics()
        engines.append(connect(Connection("opensearch", tuple(urls), timeout_s=120)))
        sink = SearchSink(
            engines[-1],
            metrics,
            DeadLetters(state / "dead.jsonl"),
            ShipSettings(namespace=namespace, host="bench-host", chunk_docs=bulk),
        )
        followers.append(
            JournalFollower(
                sink,
                journal,
                CursorStore(state / "cursors.json"),
                threading.Condition(),
                threading.Event(),
                metrics,
            )
        )
    start = threading.Barrier(len(followers) + 1)

    def pump(follower: JournalFollower) -> None:
        start.wait()
        while follower.pump():
            pass

    threads = [threading.Thread(target=pump, args=(f,)) for f in followers]
    for thread in threads:
        thread.start()
    start.wait()
    began, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.join()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    for engine in engines:
        engine.close()
    return seconds, cpu


def machine_ticks() -> tuple[int, int, int]:
    """This machine's CPU time so far (/proc/stat, in ticks): all, idle, waiting for I/O."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields), fields[3], fields[4]


def cores_used(before: tuple[int, int, int], after: tuple[int, int, int]) -> tuple[float, float]:
    """Of this machine's cores, how many were busy between the two readings (by anything: the
    nodes, the shippers, other work), and how many idle waiting for I/O."""
    total, idle, iowait = (a - b for a, b in zip(after, before, strict=True))
    cores = os.cpu_count() or 1
    return cores * (1 - (idle + iowait) / max(1, total)), cores * iowait / max(1, total)


def stored_bytes(engine: SearchEngine, pattern: str) -> tuple[int, int]:
    """Bytes on disk of the backing indices, all copies and primaries only (merged as they are
    when shipping ends, not force-merged)."""
    engine.client.indices.flush(index=pattern)
    stats = engine.client.indices.stats(index=pattern, metric="store")["_all"]
    return stats["total"]["store"]["size_in_bytes"], stats["primaries"]["store"]["size_in_bytes"]


def replicas_of(engine: SearchEngine, namespace: str) -> set[str]:
    rows = engine.client.cat.indices(index=f".ds-logs-ascend.*-{namespace}-*", format="json")
    return {row["rep"] for row in rows}


def measure(
    label: str,
    nodes: list[RunningNode],
    replicas: int,
    args: argparse.Namespace,
    journal: Path,
    size: int,
) -> dict[int, float]:
    """Ship the journal with each number of shippers; print each; documents/s by shippers."""
    urls = [node.url for node in nodes]
    engine = connect(Connection("opensearch", tuple(urls), timeout_s=120))
    rates = {}
    try:
        if args.warm_up:  # the JVMs compile their hot code (C2) on a first shipment
            make_streams(engine, urls, "warmup", replicas)
            ship_at_once(urls, journal, args.work, ["warmup"], args.bulk)
            engine.client.indices.delete_data_stream(name="logs-ascend.*-warmup")
            engine.client.indices.delete(index="logs-ascend.*-warmup")
        for shippers in args.shippers:
            tag = f"{label.replace(' ', '')}{shippers}x"
            namespaces = [f"{tag}{number}" for number in range(shippers)]
            for namespace in namespaces:
                make_streams(engine, urls, namespace, replicas)
            theirs, machine = sum(sample(n.process.pid).cpu_s for n in nodes), machine_ticks()
            seconds, ours = ship_at_once(urls, journal, args.work, namespaces, args.bulk)
            busy, waiting = cores_used(machine, machine_ticks())
            theirs = sum(sample(node.process.pid).cpu_s for node in nodes) - theirs
            shipped = engine.count(",".join(s for n in namespaces for s in all_streams(n)))
            made = "/".join(sorted(replicas_of(engine, f"{tag}*")))  # as the indices say
            on_disk, primaries = stored_bytes(engine, f".ds-logs-ascend.*-{tag}*-*")
            per_thousand = 1000 / shipped
            print(
                f"{label}, replicas {made}, {shippers} shipper(s): "
                f"{shipped / seconds:,.0f} documents/s, {shippers * size / seconds / 1e6:.1f} "
                f"MB/s ({shipped:,} documents in {seconds:.1f} s); CPU per 1,000 documents: "
                f"the node(s) {theirs * per_thousand:.2f} s, the shippers "
                f"{ours * per_thousand:.2f} s; the node(s) used {theirs / seconds:.2f} cores, "
                f"the shippers {ours / seconds:.2f}, the machine {busy:.2f} of "
                f"{os.cpu_count()} (and {waiting:.2f} idle waiting for I/O); on disk "
                f"{on_disk / shipped:,.0f} bytes a document ({primaries / shipped:,.0f} in the "
                "primaries)",
                flush=True,
            )
            rates[shippers] = shipped / seconds
            engine.client.indices.delete_data_stream(name=f"logs-ascend.*-{tag}*")
            engine.client.indices.delete(index=f"logs-ascend.*-{tag}*")
    finally:
        engine.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--bulk", type=int, default=2000, help="documents in a bulk request")
    parser.add_argument(
        "--shippers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 4],
        help="how many ship at once, in turn (default 1,4)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="measure from the first shipment (the JVMs still compiling)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-cluster-bench"))
    args = parser.parse_args()
    tune_garbage_collector()  # the agent's collector settings, where its sink runs
    _, journal = build_journal(args.work, args.lines)
    count, size, _ = documents_alone(journal)
    print(f"journal: {count:,} records ({size / 1e6:.0f} MB as JSON documents)", flush=True)
    before = machine_ticks()
    time.sleep(5)
    busy, _ = cores_used(before, machine_ticks())
    print(f"before the run, other work kept {busy:.2f} of {os.cpu_count()} cores busy")
    for home in ("one-node", "three-nodes"):  # the data of an earlier run
        shutil.rmtree(args.work / home, ignore_errors=True)
    node = start_node(args.work / "one-node", jvm_opts=CLUSTER_JVM_OPTS)
    try:
        one = measure("one node", [node], 0, args, journal, size)
    finally:
        node.stop()
    cluster = start_cluster(args.work / "three-nodes", jvm_opts=CLUSTER_JVM_OPTS)
    try:
        three = measure("three nodes", cluster.nodes, 1, args, journal, size)
    finally:
        cluster.stop()
    for shippers in args.shippers:
        print(
            f"{shippers} shipper(s): one node {one[shippers]:,.0f} documents/s "
            f"({one[shippers] * size / count / 1e6:.1f} MB/s); three nodes with one replica "
            f"{three[shippers]:,.0f} documents/s ({three[shippers] * size / count / 1e6:.1f} MB/s)"
        )


if __name__ == "__main__":
    main()
