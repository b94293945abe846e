"""Live cluster incidents: simulated agents ship a job's failure into a local node, and the real
correlator names the failed device.

    python bench/correlate_live_bench.py [--ranks 800,3200] [--work /tmp/npuwatch-live-bench]

The job is the one of bench/correlate_bench.py (16 NPUs a host, one process and one plog an
NPU, world, TP and DP communicators; host 7 NPU 3 fails with an AI Core error, every other rank
times out in the world AllReduce naming it), its log times moved so that the timeouts are
written at about the present: the fault is half an hour old, as HCCL_EXEC_TIMEOUT makes it.

Each host has a simulated agent: not an interpreter each (200 agents of 40 MB and their threads
would not fit two cores beside the node), but the agent's own parts for one host, in this
process, driven one host after another: StreamParser over its files, the CollectiveWatch of the
rules thread, a journal of its own written through JournalStage.build_batch, and the search sink
through the journal follower, as the agent ships (all records, min_level DEBUG, the default).
The correlator is the real `npuwatch correlate`, in its own process, with its default poll
interval. For each size:

  (1) init: every host's lines before the fault (identity lines, healthy steps) shipped; the
      correlator started and waited on until it knows every process (its own gauge);
  (2) the fault: the failed host's lines from the fault on; the time from its events being
      acknowledged by the node to the first, provisional, incident document;
  (3) the timeouts: every other host's lines, host after host; each agent closes its Notify Wait
      block after its quiet wait (5 s, simulated: the agents are ticked 5 s ahead) and ships the
      event. The figure: from the last collective event acknowledged to the incident final with
      every victim (target <= 10 s; the agents' fixed waits, quiet close and commit interval,
      come before it and are printed beside it);
  (4) the correlator's CPU seconds and peak RSS (/proc) in each phase, and its cost at 16,000
      ranks extrapolated (a line through the two sizes);
  (5) the reader's cost on the topology index after the run: every document read with its
      source (what a restarted correlator does), then a look back over all of them, seen (ids
      and ingest times only; nothing is read again).

The reference, measured in the same run: a plain document indexed and searched for, i.e. what
any reader of the node waits at least (its refresh interval).

Then healthy training, without the node: one host of 16 processes for an hour of log time (one
training step a second a process, 4 INFO lines a step), the clock simulated: the documents and
the bulk bytes the collective watch adds (process documents written again, heartbeats), beside
the bulk bytes of the host's own records (target: < 1 %).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from tests.opensearch_node.launcher import start_node

import correlate_bench as job_logs
import npuwatch
from npuwatch.agent.collective_stage import CollectiveSettings, CollectiveWatch, JournalStates
from npuwatch.agent.journal_stage import JournalStage, JournalTiming
from npuwatch.agent.queue import ByteQueue
from npuwatch.cluster.reader import IngestReader
from npuwatch.handoff import JournalWork, StateRow
from npuwatch.journal.cursors import CursorStore
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import Journal, JournalSettings
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.hccl.shipped import TOPOLOGY_STREAM
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Record, SourceInfo
from npuwatch.sinks.follower import JournalFollower
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.documents import Action, block_actions, event_action, state_action
from npuwatch.sinks.search.engine import Connection, SearchEngine, status_of
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.search_sink import SearchSink, ShipSettings
from npuwatch.sinks.search.streams import events_stream, state_index

NPUS = job_logs.NPUS
QUIET_CLOSE_S = CollectiveSettings().quiet_close_s
COMMIT_INTERVAL_S = JournalTiming().commit_interval_s
TARGET_LATENCY_S = 10.0
TARGET_SHARE = 0.01
EXTRAPOLATE_TO = 16_000
HEALTHY_HOUR_S = 3600
WAIT_S = 300.0
VICTIMS_FIELD = "victims_count"


# -- the job's log times -------------------------------------------------------------------------


def place_in_time(victims_at: float) -> timezone:
    """Make the job's timeouts fall at `victims_at` (epoch seconds): the logs keep their times
    of day, the date becomes that day's, and the hosts' zone is the offset that maps one onto
    the other (within a day either way)."""
    timeout_local = job_logs.FAILURE_US + job_logs.EXEC_TIMEOUT_S * 1_000_000
    at = datetime.fromtimestamp(victims_at, timezone.utc).replace(tzinfo=None)
    job_logs.DATE = at.date().isoformat()
    local = datetime.combine(at.date(), datetime.min.time()) + timedelta(microseconds=timeout_local)
    return timezone(timedelta(seconds=round((local - at).total_seconds())))


# -- one simulated agent -----------------------------------------------------------------------


@dataclass
class Shipped:
    """What the agents' sinks sent, by kind of document: count and bulk bytes."""

    counts: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, action: Action) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.sizes[kind] = self.sizes.get(kind, 0) + bulk_bytes(action)

    def total(self, *kinds: str) -> tuple[int, int]:
        return (
            sum(self.counts.get(kind, 0) for kind in kinds),
            sum(self.sizes.get(kind, 0) for kind in kinds),
        )


def bulk_bytes(action: Action) -> int:
    """The bytes of one document in a bulk request: its action line and its source line."""
    header = {action.op: {"_index": action.stream, "_id": action.id}}
    return len(json.dumps(header)) + len(json.dumps(action.document, ensure_ascii=False)) + 2


class SimulatedAgent:
    """One host's agent, as far as shipping goes: parse, watch, journal, ship."""

    def __init__(
        self,
        host: str,
        files: dict[str, tuple[list[str], list[str]]],
        zone: timezone,
        work: Path,
        engine: SearchEngine | None,
        namespace: str,
    ) -> None:
        self.host = host
        self._files = files
        self._clock = LocalClock(zone)
        self._parsers: dict[str, StreamParser] = {}
        self._offsets: dict[str, int] = {}
        state = work / host
        shutil.rmtree(state, ignore_errors=True)
        self.journal = Journal(state / "journal", JournalSettings(sync="normal"))
        self.journal.open()
        self._stage = JournalStage(self.journal, ByteQueue(1 << 20), SelfMetrics(), JournalTiming())
        self.watch = CollectiveWatch(
            host, npuwatch.__version__, CollectiveSettings(), JournalStates(state / "journal")
        )
        self._follower: JournalFollower | None = None
        if engine is not None:
            sink = SearchSink(
                engine,
                SelfMetrics(),
                DeadLetters(state / "dead-letters.jsonl"),
                ShipSettings(namespace=namespace, host=host),
            )
            self._follower = JournalFollower(
                sink,
                self.journal.directory,
                CursorStore(state / "cursors.json"),
                threading.Condition(),
                threading.Event(),
            )

    def read(self, part: int, now_s: float) -> list[JournalWork]:
        """The lines of `part` (0: before the fault, 1: from it on) of every file, as the rules
        thread hands them to the journal."""
        works: list[JournalWork] = []
        for path, parts in self._files.items():
            lines = parts[part]
            if not lines:
                continue
            data = ("\n".join(lines) + "\n").encode()
            parser = self._parsers.get(path)
            if parser is None:
                parser = self._parsers[path] = StreamParser(self._clock, path=path, host=self.host)
            offset = self._offsets.get(path, 0)
            records = parser.feed(data, offset) + parser.flush()
            self._offsets[path] = offset + len(data)
            works.append(self.work(path, records, now_s, parser.source))
        return works

    def work(
        self, path: str, records: list[Record], now_s: float, source: SourceInfo | None = None
    ) -> JournalWork:
        rows, states = self.watch.observe(records, path, now_s)
        return JournalWork(
            path,
            source,
            records,
            events=rows,
            states=states,
            size=sum(len(r.message) for r in records),
        )

    def tick(self, now_s: float) -> JournalWork:
        rows, states = self.watch.tick(now_s, int(time.time() * 1_000_000))
        return JournalWork("", None, events=rows, states=states)

    def commit(self, works: list[JournalWork]) -> None:
        batch = self._stage.build_batch(works)
        if batch:
            self.journal.commit(batch)

    def ship(self) -> None:
        assert self._follower is not None
        while self._follower.pump():
            pass

    def shipped(self, into: Shipped, namespace: str) -> None:
        """Count what the sink sends from this journal (records, events, the last version of
        each state)."""
        with JournalReader(self.journal.directory) as reader:
            position = Position()
            while page := reader.blocks_after(position, 8):
                for _, block in page:
                    for action in block_actions(block, namespace, self.host):
                        if action is not None:
                            into.add("record", action)
                position = page[-1][0]
            position = Position()
            while rows := reader.event_rows_after(position, 512):
                for _, id_, document in rows:
                    kind = "collective event" if '"collective"' in document else "rule event"
                    into.add(kind, event_action(id_, document, namespace))
                position = rows[-1][0]

    def close(self) -> None:
        self.watch.finish(0.0, 0)
        if self._follower is not None:
            self._follower.close()
        self.journal.close()


def count_states(into: Shipped, states: list[StateRow], namespace: str) -> None:
    for row in states:
        kind = "heartbeat" if '"ascend.heartbeat"' in row.document else "process document"
        into.add(kind, state_action(row, namespace))


# -- the correlator ------------------------------------------------------------------------------


class Correlator:
    """`npuwatch correlate` in its own process, its /metrics and its CPU and memory."""

    def __init__(self, work: Path, url: str, namespace: str) -> None:
        self.port = _free_port()
        config = work / "correlate.toml"
        config.write_text(
            f'[sinks.elasticsearch]\nflavour = "opensearch"\nhosts = ["{url}"]\n'
            f'namespace = "{namespace}"\n[correlate]\nlisten = "127.0.0.1:{self.port}"\n',
            encoding="utf-8",
        )
        self.said = work / "correlate.log"
        with self.said.open("w", encoding="utf-8") as said:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "npuwatch", "correlate", "--config", str(config)],
                stdout=subprocess.DEVNULL,
                stderr=said,
            )
        self.poll_interval_s = 5.0

    def metric(self, name: str) -> float | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        total = None
        for line in text.splitlines():
            if line.startswith(name) and not line.startswith("#"):
                total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
        return total

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mb(self) -> tuple[float, float]:
        """(RSS now, peak RSS) in MB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
        found = {line.split(":")[0]: int(line.split()[1]) for line in status if "kB" in line}
        return found["VmRSS"] / 1024, found["VmHWM"] / 1024

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            sys.exit(f"the correlator stopped: {self.said.read_text('utf-8')[-2000:]}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, every_s: float = 0.05) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every_s)
    sys.exit(f"gave up waiting {WAIT_S:.0f} s for {what}")


def incident(engine: SearchEngine, namespace: str) -> dict[str, Any] | None:
    try:
        hits = engine.search(
            f"logs-ascend.incidents-{namespace}", {"size": 2, "query": {"match_all": {}}}
        )
    except Exception as error:
        if status_of(error) == 503:  # the index is being made: its shard is not started yet
            return None
        raise
    return hits[0]["_source"]["ascend"]["incident"] if hits else None


# -- one size -----------------------------------------------------------------------------------


@dataclass
class LiveFigures:
    ranks: int
    hosts: int
    init_docs: int = 0
    init_ship_s: float = 0.0
    read_all_s: float = 0.0
    first_verdict_s: float = 0.0
    final_s: float = 0.0
    failure_ship_s: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    rss_mb: dict[str, float] = field(default_factory=dict)
    peak_mb: float = 0.0
    verdict: str = ""
    reads: ReadCosts | None = None


@dataclass(frozen=True)
class ReadCosts:
    """The correlator's reader on the topology index: every document read with its source,
    then a look back over all of them, seen (wall and CPU seconds of this process); and what
    the topology and the collective events (the agents run no rules here) hold in the engine:
    documents, primary store bytes, merged."""

    documents: int
    full_s: tuple[float, float]
    look_back_s: tuple[float, float]
    stored: dict[str, tuple[int, int]] = field(default_factory=dict)


def read_costs(engine: SearchEngine, namespace: str) -> ReadCosts:
    year = 365 * 86400.0
    reads = IngestReader(engine, state_index(TOPOLOGY_STREAM, namespace), None, year, year)
    wall, cpu = time.perf_counter(), time.process_time()
    documents = len(reads.read())
    full = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    if reads.read():
        sys.exit("the look back read a document again")
    look_back = (time.perf_counter() - wall, time.process_time() - cpu)
    stored: dict[str, tuple[int, int]] = {}
    for name, index in (
        ("topology", state_index(TOPOLOGY_STREAM, namespace)),
        ("collective events", events_stream(namespace)),
    ):
        engine.client.indices.forcemerge(index=index, max_num_segments=1)
        primaries = engine.client.indices.stats(index=index)["_all"]["primaries"]
        count = int(primaries["docs"]["count"])
        stored[name] = (count, int(primaries["store"]["size_in_bytes"]))
    return ReadCosts(documents, full, look_back, stored)


def job_files(job: job_logs.Job) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    hosts: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for host in range(job.hosts):
        name = job_logs.host_name(host)
        folder = f"/jobs/{name}/ascend/log/run/plog"
        files = hosts.setdefault(name, {})
        for npu in range(job.npus_on(host)):
            file_name, before, failure = job_logs.plog_parts(job, host, npu)
            files[f"{folder}/{file_name}"] = (before, failure)
    return hosts


def run_size(ranks: int, engine: SearchEngine, url: str, work: Path) -> LiveFigures:
    namespace = f"live{ranks}"
    job = job_logs.Job(ranks, job_logs.BASE_STEPS)
    figures = LiveFigures(ranks, job.hosts)
    set_up(url, namespace, work)
    # The timeouts are written about two minutes from now, after the init phase.
    zone = place_in_time(time.time() + 120)
    agents = [
        SimulatedAgent(host, files, zone, work / namespace, engine, namespace)
        for host, files in job_files(job).items()
    ]
    root_host = job_logs.host_name(job.root[0])
    try:
        started = time.perf_counter()
        for agent in agents:
            now = time.monotonic()
            agent.commit([*agent.read(0, now), agent.tick(now)])
            agent.commit([agent.tick(now + 1.0)])  # the burst of the init is one document
            agent.ship()
        figures.init_ship_s = time.perf_counter() - started
        correlator = Correlator(work, url, namespace)
        try:
            measure(correlator, figures, agents, root_host, engine, namespace)
        finally:
            correlator.stop()
        figures.reads = read_costs(engine, namespace)
    finally:
        for agent in agents:
            agent.close()
        for stream in ("logs-ascend.*-" + namespace, f"logs-ascend.incidents-{namespace}"):
            _delete(engine, stream)
    return figures


def measure(
    correlator: Correlator,
    figures: LiveFigures,
    agents: list[SimulatedAgent],
    root_host: str,
    engine: SearchEngine,
    namespace: str,
) -> None:
    started = time.perf_counter()

    def knows_everyone() -> bool:
        correlator.check_alive()
        return (correlator.metric("npuwatch_correlate_processes") or 0) >= figures.ranks

    wait_for(knows_everyone, "the correlator to read every process", 0.2)
    figures.read_all_s = time.perf_counter() - started
    figures.cpu["init"] = correlator.cpu_s()
    figures.rss_mb["init"] = correlator.memory_mb()[0]

    # The failed host and the first host whose ranks wait for it: the first verdict.
    root = next(agent for agent in agents if agent.host == root_host)
    others = [agent for agent in agents if agent is not root]
    cpu_before = correlator.cpu_s()
    ship_failure([root, others[0]])
    written = time.perf_counter()
    first = wait_for(lambda: incident(engine, namespace), "the first incident document")
    figures.first_verdict_s = time.perf_counter() - written
    if not first.get("provisional"):
        print(f"  note: the first incident document is already final: {first.get('summary')}")

    started = time.perf_counter()
    ship_failure(others[1:])
    last_written = time.perf_counter()
    figures.failure_ship_s = last_written - started
    victims = figures.ranks - 1

    def final() -> dict[str, Any] | None:
        found = incident(engine, namespace)
        done = (
            found is not None
            and not found.get("provisional")
            and found.get(VICTIMS_FIELD) == victims
        )
        return found if done else None

    decided = wait_for(final, f"the final incident with {victims} victims")
    figures.final_s = time.perf_counter() - last_written
    figures.verdict = str(decided.get("summary"))
    figures.cpu["failure"] = correlator.cpu_s() - cpu_before
    time.sleep(correlator.poll_interval_s * 2)  # two idle rounds: the steady cost
    cpu_idle = correlator.cpu_s()
    time.sleep(correlator.poll_interval_s * 2)
    figures.cpu["idle round"] = (correlator.cpu_s() - cpu_idle) / 2
    figures.rss_mb["after"], figures.peak_mb = correlator.memory_mb()
    roots = decided.get("root_cause") or [{}]
    expected = (root_host, job_logs.ROOT_NPU)
    if (roots[0].get("host"), roots[0].get("device")) != expected:
        sys.exit(f"wrong root cause {roots}: expected {expected}")


def ship_failure(agents: list[SimulatedAgent]) -> None:
    """The hosts' lines from the fault on, shipped host after host; then each agent's quiet
    wait is over (simulated: ticked that much ahead) and it ships its closed blocks."""
    now = time.monotonic()
    for agent in agents:
        agent.commit([*agent.read(1, now), agent.tick(now)])
        agent.ship()
    for agent in agents:
        agent.commit([agent.tick(now + QUIET_CLOSE_S)])
        agent.ship()


def set_up(url: str, namespace: str, work: Path) -> None:
    """`npuwatch es setup` for the namespace (this node has no lifecycle plugin: exit 1)."""
    config = work / f"setup-{namespace}.toml"
    config.write_text(
        f'[sinks.elasticsearch]\nflavour = "opensearch"\nhosts = ["{url}"]\n'
        f'namespace = "{namespace}"\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "npuwatch", "es", "setup", "--replicas", "0", "--config", config],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1) or "installed" not in done.stdout:
        sys.exit(f"es setup failed: {done.stderr}")


def _delete(engine: SearchEngine, pattern: str) -> None:
    with contextlib.suppress(Exception):
        engine.client.indices.delete_data_stream(name=pattern)
    with contextlib.suppress(Exception):
        engine.client.indices.delete(index=pattern)


def reference_visibility_s(engine: SearchEngine) -> float:
    """A plain document indexed, then searched for until found: the node's own floor."""
    index = "npuwatch-bench-probe"
    engine.client.index(index=index, id="warm", body={"n": 0})
    times = []
    for n in range(1, 6):
        started = time.perf_counter()
        engine.client.index(index=index, id=str(n), body={"n": n})
        query: dict[str, Any] = {"query": {"term": {"n": n}}}
        wait_for(partial(engine.search, index, query), "the probe")
        times.append(time.perf_counter() - started)
    _delete(engine, index)
    return sorted(times)[len(times) // 2]


# -- healthy training -------------------------------------------------------------------------


def healthy_hour(work: Path) -> Shipped:
    """One host of 16 processes for an hour of log time, one step a second a process: what
    its sink sends (records, events), and every version of the states it writes."""
    job = job_logs.Job(NPUS * 16, HEALTHY_HOUR_S)  # host 1 of a 256-rank job; no failure
    saved = job_logs.FAILURE_US
    job_logs.FAILURE_US = job_logs.INIT_END_US + (HEALTHY_HOUR_S + 2) * 1_000_000
    try:
        files = job_files_of_host(job, 1)
    finally:
        job_logs.FAILURE_US = saved
    zone = timezone.utc
    agent = SimulatedAgent(job_logs.host_name(1), files, zone, work / "healthy", None, "bench")
    shipped = Shipped()
    try:
        # The records in one-second batches of log time; the watch's clock follows it.
        start_s = ticked = None
        for second, path, source, records in second_batches(agent, files, zone):
            start_s = second if start_s is None else start_s
            now_s = float(second - start_s)
            works = [agent.work(path, records, now_s, source)]
            if ticked != second:  # the rules thread ticks the watch about once a second
                works.append(agent.tick(now_s))
                ticked = second
            for done in works:
                count_states(shipped, done.states, "bench")
            agent.commit(works)
        agent.shipped(shipped, "bench")
    finally:
        agent.close()
    return shipped


def job_files_of_host(job: job_logs.Job, host: int) -> dict[str, tuple[list[str], list[str]]]:
    name = job_logs.host_name(host)
    files: dict[str, tuple[list[str], list[str]]] = {}
    for npu in range(job.npus_on(host)):
        file_name, before, _ = job_logs.plog_parts(job, host, npu)
        files[f"/jobs/{name}/ascend/log/run/plog/{file_name}"] = (before, [])
    return files


def second_batches(
    agent: SimulatedAgent, files: dict[str, tuple[list[str], list[str]]], zone: timezone
) -> Iterator[tuple[int, str, SourceInfo, list[Record]]]:
    """Every file's records, cut into one-second batches of log time, in time order."""
    clock = LocalClock(zone)
    batches: list[tuple[int, int, str, SourceInfo, list[Record]]] = []
    for order, (path, (before, _)) in enumerate(files.items()):
        parser = StreamParser(clock, path=path, host=agent.host)
        records = parser.feed(("\n".join(before) + "\n").encode(), 0) + parser.flush()
        current: list[Record] = []
        second = None
        for record in records:
            at = (record.timestamp_us or 0) // 1_000_000
            if second is not None and at != second:
                batches.append((second, order, path, parser.source, current))
                current = []
            second = at
            current.append(record)
        if current and second is not None:
            batches.append((second, order, path, parser.source, current))
    batches.sort(key=lambda item: (item[0], item[1]))
    for second, _, path, source, records in batches:
        yield second, path, source, records


# -- the report -------------------------------------------------------------------------------


def report_size(figures: LiveFigures, reference_s: float) -> None:
    print(
        f"{figures.ranks:,} ranks on {figures.hosts} hosts: init shipped in "
        f"{figures.init_ship_s:.1f} s; the correlator knew every process "
        f"{figures.read_all_s:.1f} s after its start"
    )
    print(
        f"  first (provisional) incident {figures.first_verdict_s:.1f} s after the fault's "
        "events were written"
    )
    mark = "met" if figures.final_s <= TARGET_LATENCY_S else "MISSED"
    print(
        f"  final incident {figures.final_s:.1f} s after the last collective event was written "
        f"(target <= {TARGET_LATENCY_S:.0f} s: {mark}; reference: a plain document searchable "
        f"after {reference_s:.2f} s; before it, each agent waits {QUIET_CLOSE_S:.0f} s to close "
        f"a Notify Wait block and up to {COMMIT_INTERVAL_S} s to commit); the failure's "
        f"documents took {figures.failure_ship_s:.1f} s to ship"
    )
    print(f"  verdict: {figures.verdict}")
    cpu = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in figures.cpu.items())
    rss = ", ".join(f"{name} {mb:.0f} MB" for name, mb in figures.rss_mb.items())
    print(f"  correlator CPU: {cpu}; RSS: {rss}, peak {figures.peak_mb:.0f} MB")
    if figures.reads is not None:
        reads = figures.reads
        print(
            f"  reading the {reads.documents:,} topology documents: with their sources "
            f"{reads.full_s[0]:.2f} s ({reads.full_s[1]:.2f} s CPU here); a look back over all "
            f"of them, seen: {reads.look_back_s[0]:.2f} s ({reads.look_back_s[1]:.2f} s CPU)"
        )
        held = "; ".join(
            f"{name} {count:,} documents, {size / 1e6:.1f} MB"
            for name, (count, size) in reads.stored.items()
        )
        print(f"  in the engine (primary store, merged): {held}")


def extrapolate(sizes: list[LiveFigures]) -> None:
    if len(sizes) < 2:
        return
    small, large = sizes[0], sizes[-1]

    def line(pick: Callable[[LiveFigures], float]) -> float:
        slope = (pick(large) - pick(small)) / (large.ranks - small.ranks)
        return pick(large) + slope * (EXTRAPOLATE_TO - large.ranks)

    print(
        f"extrapolated to {EXTRAPOLATE_TO:,} ranks (a line through {small.ranks:,} and "
        f"{large.ranks:,}): correlator CPU {line(lambda f: f.cpu['init']):.1f} s to read the "
        f"init, {line(lambda f: f.cpu['failure']):.1f} s for the failure, "
        f"{line(lambda f: f.cpu['idle round']):.2f} s an idle round; peak RSS "
        f"{line(lambda f: f.peak_mb):.0f} MB"
    )


def report_healthy(shipped: Shipped) -> None:
    records = shipped.total("record")
    added = shipped.total("process document", "heartbeat")
    share = added[1] / records[1] if records[1] else float("inf")
    mark = "met" if share < TARGET_SHARE else "MISSED"
    print(
        f"healthy training, one host of {NPUS} processes, one hour of log time: the sink sends "
        f"{records[0]:,} records ({records[1] / 1e6:.1f} MB of bulk); correlation adds "
        f"{added[0]:,} documents ({added[1] / 1e3:.0f} kB): "
        + ", ".join(
            f"{shipped.counts.get(kind, 0):,} {kind}s {shipped.sizes.get(kind, 0) / 1e3:.0f} kB"
            for kind in ("process document", "heartbeat")
        )
        + f"; {100 * share:.2f} % of the host's volume (target < {100 * TARGET_SHARE:.0f} %: "
        f"{mark}); < 1 % holds while the host ships more than "
        f"{added[1] / TARGET_SHARE / 1e6:.1f} MB an hour"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ranks", default="800,3200", help="job sizes, comma-separated (16 ranks a host)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-live-bench"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.ranks.split(",")]
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    python = sys.version.split()[0]
    print(f"npuwatch {npuwatch.__version__}, python {python}, {os.cpu_count()} cores")
    report_healthy(healthy_hour(args.work))
    node = start_node(args.work / "node")
    engine = connect(Connection("opensearch", (node.url,), timeout_s=120))
    try:
        reference = reference_visibility_s(engine)
        figures = []
        for ranks in sizes:
            figures.append(run_size(ranks, engine, node.url, args.work))
            report_size(figures[-1], reference)
        extrapolate(figures)
    finally:
        engine.close()
        node.stop()


if __name__ == "__main__":
    main()
