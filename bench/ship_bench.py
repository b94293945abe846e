"""Shipping throughput to a local OpenSearch node (tests/opensearch_node), by bulk size.

    python bench/ship_bench.py [--lines 200000] [--work /tmp/npuwatch-ship-bench]

Builds a journal once (a generated tree in the real CANN formats, followed by the real agent),
starts the node, then ships the whole journal once per bulk size, starting at 100 documents and
doubling, each into a fresh namespace: documents/s and MB/s of JSON sent, with the share of the
time spent turning journal blocks into documents (re-parsing, in this process) and the CPU of
this process and of the node (/proc). Then the agent end to end: the real agent with the sink
enabled (the best bulk size) on the same tree, from start to the last record being searchable,
with the agent's CPU and the node's. The reference is the documents alone, built without
sending.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.opensearch_node.launcher import start_node

from agent_bench import sample
from make_tree import write_tree
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.follower import JournalFollower
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.documents import block_actions
from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink, ShipSettings
from npuwatch.sinks.search.streams import all_streams


def journal_records(journal: Path) -> int:
    total = 0
    with JournalReader(journal) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            total += sum(block.count for _, block in page)
            position = page[-1][0]
    return total


def build_journal(work: Path, lines: int) -> tuple[Path, Path]:
    tree, state = work / "tree", work / "state"
    if (work / "built").exists():
        return tree, state / "journal"
    shutil.rmtree(work, ignore_errors=True)
    write_tree(tree, lines)
    config = work / "agent.toml"
    config.write_text(
        f'[agent]\nstate_directory = "{state}"\ntimezone = "UTC"\n'
        f'[sources]\nroots = ["{tree}"]\nidle_flush = "500ms"\n'
        "[sinks.prometheus]\nenabled = false\n",
        encoding="utf-8",
    )
    agent = subprocess.Popen([sys.executable, "-m", "npuwatch", "agent", "--config", str(config)])
    last, stable = -1, 0
    while stable < 3:
        time.sleep(1)
        count = journal_records(state / "journal") if (state / "journal").exists() else 0
        stable = stable + 1 if count == last and count > 0 else 0
        last = count
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=120)
    (work / "built").write_text("", encoding="utf-8")
    return tree, state / "journal"


def documents_alone(journal: Path) -> tuple[int, int, float]:
    """(documents, bytes of JSON, seconds) to build every document without sending it."""
    count = size = 0
    started = time.perf_counter()
    with JournalReader(journal) as reader:
        position = Position()
        while page := reader.blocks_after(position, 4):
            for _, block in page:
                for action in block_actions(block, "bench", "bench-host"):
                    if action is None:
                        continue
                    count += 1
                    size += len(json.dumps(action.document))
            position = page[-1][0]
    return count, size, time.perf_counter() - started


def es_setup(*options: str) -> None:
    """`npuwatch es setup`, what an operator runs first: every template (the records', the
    events', the plain indices of topology and incidents) and the ingest pipeline."""
    command = [sys.executable, "-m", "npuwatch", "es", "setup", "--replicas", "0", *options]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    # Exit 1: a part could not be installed; on the test node only the lifecycle policy (it
    # has no Index State Management plugin), which shipping does not need.
    if done.returncode not in (0, 1) or "index template" in done.stderr:
        raise SystemExit(f"npuwatch es setup failed:\n{done.stdout}{done.stderr}")


def ship(
    engine: SearchEngine, url: str, journal: Path, work: Path, namespace: str, docs: int
) -> float:
    es_setup("--flavour", "opensearch", "--host", url, "--namespace", namespace)
    state = work / f"ship-{namespace}"
    shutil.rmtree(state, ignore_errors=True)
    metrics = SelfMetrics()
    sink = SearchSink(
        engine,
        metrics,
        DeadLetters(state / "dead.jsonl"),
        ShipSettings(namespace=namespace, host="bench-host", chunk_docs=docs, blocks_per_page=4),
    )
    shipper = JournalFollower(
        sink,
        journal,
        CursorStore(state / "cursors.json"),
        threading.Condition(),
        threading.Event(),
        metrics,
    )
    started = time.perf_counter()
    while shipper.pump():
        pass
    return time.perf_counter() - started


def end_to_end(
    engine: SearchEngine, url: str, tree: Path, work: Path, docs: int, expected: int
) -> tuple[float, float]:
    """Seconds from starting the real agent with the sink on `tree` to `expected` documents,
    and the agent's CPU seconds meanwhile."""
    state = work / "end-to-end"
    shutil.rmtree(state, ignore_errors=True)
    config = work / "end-to-end.toml"
    config.write_text(
        f'[agent]\nstate_directory = "{state}"\ntimezone = "UTC"\n'
        f'[sources]\nroots = ["{tree}"]\nidle_flush = "500ms"\n'
        "[sinks.prometheus]\nenabled = false\n"
        f'[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\nhosts = ["{url}"]\n'
        f'namespace = "endtoend"\nbatch_documents = {docs}\n',
        encoding="utf-8",
    )
    es_setup("--config", str(config))
    started = time.perf_counter()
    agent = subprocess.Popen([sys.executable, "-m", "npuwatch", "agent", "--config", str(config)])
    try:
        streams = ",".join(all_streams("endtoend"))
        while engine.count(streams) - _events(engine) < expected:
            time.sleep(0.5)
        return time.perf_counter() - started, sample(agent.pid).cpu_s
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=120)
        engine.client.indices.delete_data_stream(name="logs-ascend.*-endtoend")


def _events(engine: SearchEngine) -> int:
    return engine.count("logs-ascend.events-endtoend")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-ship-bench"))
    parser.add_argument("--largest", type=int, default=6400, help="largest bulk size tried")
    args = parser.parse_args()
    tune_garbage_collector()  # the agent's collector settings, where its sink runs
    tree, journal = build_journal(args.work, args.lines)
    count, size, alone = documents_alone(journal)
    print(f"journal: {count:,} records ({size / 1e6:.0f} MB as JSON documents)")
    print(f"reference: building the documents alone {count / alone:,.0f} documents/s")
    node = start_node(args.work / "node")
    engine = connect(Connection("opensearch", (node.url,), timeout_s=120))
    try:
        docs, best = 100, (0.0, 100)
        while docs <= args.largest:
            ours, theirs = time.process_time(), sample(node.process.pid).cpu_s
            seconds = ship(engine, node.url, journal, args.work, f"bulk{docs}", docs)
            ours = time.process_time() - ours
            theirs = sample(node.process.pid).cpu_s - theirs
            shipped = engine.count(",".join(all_streams(f"bulk{docs}")))
            print(
                f"bulk of {docs:>5} documents: {shipped / seconds:>8,.0f} documents/s,"
                f" {size / seconds / 1e6:5.1f} MB/s ({shipped:,} documents in {seconds:.1f} s;"
                f" building them is {100 * alone / seconds:.0f} % of that); CPU: npuwatch"
                f" {ours:.1f} s ({100 * ours / seconds:.0f} % of a core), the node {theirs:.1f} s"
                f" ({100 * theirs / seconds:.0f} %)"
            )
            best = max(best, (shipped / seconds, docs))
            engine.client.indices.delete_data_stream(name=f"logs-ascend.*-bulk{docs}")
            docs *= 2
        theirs = sample(node.process.pid).cpu_s
        seconds, agent_cpu = end_to_end(engine, node.url, tree, args.work, best[1], count)
        theirs = sample(node.process.pid).cpu_s - theirs
        print(
            f"agent end to end (files to searchable documents, bulk of {best[1]}): {count:,}"
            f" records in {seconds:.1f} s = {count / seconds:,.0f} records/s; CPU: the agent"
            f" {agent_cpu:.1f} s ({100 * agent_cpu / seconds:.0f} % of a core), the node"
            f" {theirs:.1f} s ({100 * theirs / seconds:.0f} %)"
        )
    finally:
        engine.close()
        node.stop()


if __name__ == "__main__":
    main()
