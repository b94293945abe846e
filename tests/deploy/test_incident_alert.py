"""End to end, one page for a collective failure: two real agents read the HCCL-timeout tree
(host-a and host-b) and ship to a real OpenSearch node, a real `npuwatch correlate` names the
device that failed first, and a real Prometheus and Alertmanager, configured from
deploy/prometheus with every target in one `cluster`, page AscendCollectiveIncident and hold
back the per-rank timeout alerts of that cluster.

The tree is written with its times moved to now (its timeouts at the moment the agents start),
and the order of a live failure is kept by when each part starts:

- The correlator starts once the agents' documents are all in the search engine, so that its
  first verdict is whole. (Live, a verdict grows as hosts report; Alertmanager pages the first
  one and does not page again when only the texts change, so a page may count fewer waiting
  ranks than `npuwatch incident show` does later.)
- Prometheus scrapes the correlator first and the agents once the incident is paged. Live, the
  correlator decides from the failing rank's own errors within seconds, while the ranks that
  wait for it time out minutes later and their rule events are counted a minute after that
  (the rules' dedupe window). Here every line is read at once, and some of the agents'
  timeouts (watchdog, the failing rank's task timeout) would reach Alertmanager as early as
  the incident.

A counter series born at its first event counts only on a target scraped 5 minutes before
(alerts.yml): as in test_alert_end_to_end.py, the agents' `up` history is backfilled.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from npuwatch.sinks.search.engine import Connection, SearchEngine
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import events_stream, state_index
from tests.deploy.prometheus_stack import (
    ALERTS,
    PROMETHEUS_EXAMPLE,
    REPOSITORY,
    LoggedProcess,
    WebhookReceiver,
    agent_environment,
    alertmanager_process,
    backfill_up,
    binary,
    fetch,
    fetch_json,
    free_ports,
    poll,
    prometheus_process,
)
from tests.deploy.test_grafana_dashboard import (
    as_grafana_sends_it,
    correlator_panels,
    panel_queries,
)
from tests.opensearch_node.launcher import RunningNode, start_node
from tests.real_servers import real_server

pytestmark = pytest.mark.integration

TREE = REPOSITORY / "fixtures" / "trees" / "hccl-timeout"
NAMESPACE = "incidentalert"
AGENT_JOB, CORRELATOR_JOB = "npuwatch", "npuwatch-correlate"
HOSTS = {"host-a": "127.0.0.2", "host-b": "127.0.0.3"}
"""Each agent on an address of its own: prometheus.yml's `instance` is the address without
the port, so two agents on 127.0.0.1 would be one instance."""
CORRELATOR_ADDRESS = "127.0.0.1"
INCIDENT_ALERT = "AscendCollectiveIncident"
TIMEOUT_ALERTS = {"AscendHcclTimeout", "AscendTaskTimeout", "AscendCollectiveWatchdogTimeout"}
CORRELATOR_ALERTS = {"NpuwatchCorrelatorDown", "NpuwatchCorrelatorFailing"}
SUMMARY = (
    "Collective incident (rdma_retransmission): host-b NPU 2 (rank 6) failed first; "
    "7 ranks were waiting on it"
)
"""What the offline engine says of this tree (tests/correlation): rank 6 on host-b,
device 2, failed first (RDMA retransmissions exceeded); ranks 0-5 and 7 waited."""
DOCUMENTS_WITHIN = 90.0
"""Seconds from the agents' start to their documents all in the search engine."""
PAGED_WITHIN = 60.0
"""Seconds from the correlator's start to the incident posted to the webhook."""
TIMEOUTS_WITHIN = 150.0
"""Seconds from the tree being written to every per-rank timeout alert firing in Prometheus:
the HCCL timeout rules count an event a minute after its line."""
HELD_BACK_FOR = 5.0
"""Seconds the timeouts must stay undelivered once Alertmanager has them (its group wait and
interval are 1 s here)."""


# The tree, its times moved to now


_CANN_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)((?:\.\d{3}\.\d{3})?)")
_C10_TIME = re.compile(r"\[([EWIF])(1[0-2]|[1-9])(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})(\d{3})")
_NAME_TIME = re.compile(r"_(\d{14})(\d{3})\.log$")


def _cann_moment(match: re.Match[str]) -> datetime:
    """`2025-09-14-09:37:31.402.005` (or without the milli- and microseconds)."""
    fraction = match[7]
    micro = int(fraction[1:4]) * 1000 + int(fraction[5:8]) if fraction else 0
    return datetime.strptime(match[0][:19], "%Y-%m-%d-%H:%M:%S").replace(microsecond=micro)


def _cann_time(match: re.Match[str], delta: timedelta) -> str:
    moved = _cann_moment(match) + delta
    text = moved.strftime("%Y-%m-%d-%H:%M:%S")
    if match[7]:
        text += f".{moved.microsecond // 1000:03d}.{moved.microsecond % 1000:03d}"
    return text


def _c10_time(match: re.Match[str], delta: timedelta, year: int) -> str:
    """`[E914 09:37:31.000512402`: c10 writes no year (the parser takes the file's)."""
    level, month, day, hour, minute, second, micro, nano = match.groups()
    written = f"{year}-{month}-{day} {hour}:{minute}:{second}"
    moved = datetime.strptime(written, "%Y-%m-%d %H:%M:%S")
    moved = moved.replace(microsecond=int(micro)) + delta
    return f"[{level}{moved.month}{moved.day:02d} {moved:%H:%M:%S}.{moved.microsecond:06d}{nano}"


def tree_times(text: str) -> list[datetime]:
    """The CANN times of `text` (every file of the tree has some)."""
    return [_cann_moment(match) for match in _CANN_TIME.finditer(text)]


def files_of(tree: Path) -> list[Path]:
    return sorted(path for path in tree.rglob("*") if path.is_file())


def moved_to(now: datetime, tree: Path = TREE) -> timedelta:
    """How far to move every time of `tree` (all its hosts alike: the correlator compares
    them) for its latest line to have been written at `now` (naive UTC)."""
    return now - max(moment for path in files_of(tree) for moment in tree_times(path.read_text()))


def write_moved_tree(source: Path, target: Path, delta: timedelta) -> None:
    """Copy `source` with every time in its lines and file names moved by `delta`."""
    for path in files_of(source):
        relative = path.relative_to(source)
        named = _NAME_TIME.search(relative.name)
        if named is not None:
            moved = datetime.strptime(named[1], "%Y%m%d%H%M%S") + delta
            stamp = moved.strftime("%Y%m%d%H%M%S") + named[2]
            relative = relative.with_name(f"{relative.name[: named.start()]}_{stamp}.log")
        text = path.read_text(encoding="utf-8")
        # c10's lines take the year of the file's dated lines (the parser does the same).
        year = min(tree_times(text), default=datetime.now() - delta).year
        text = _CANN_TIME.sub(partial(_cann_time, delta=delta), text)
        text = _C10_TIME.sub(partial(_c10_time, delta=delta, year=year), text)
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text, encoding="utf-8")


def test_the_tree_is_moved_to_now_whole(tmp_path: Path) -> None:
    """Guards for the helpers above: every time of every host is moved alike, none is left."""
    now = datetime(2031, 2, 3, 4, 5, 6)
    delta = moved_to(now)
    for host in HOSTS:
        write_moved_tree(TREE / host, tmp_path / host, delta)
    texts = {path.name: path.read_text("utf-8") for path in tmp_path.rglob("*.log")}
    assert len(texts) == len(list(TREE.rglob("*.log")))
    assert all("_2031020" in name for name in texts if "_" in name)
    assert max(moment for text in texts.values() for moment in tree_times(text)) == now
    assert not any("2025" in text or "E914" in text for text in texts.values())
    # 09:37:31.005512 in c10's format, the latest line (09:37:31.405771) now.
    assert "[E203 04:05:05.599741402" in texts["train-rank5.log"]


# The stack


@dataclass
class IncidentStack:
    """Two agents, the correlator, OpenSearch, Prometheus, Alertmanager and the webhook."""

    folder: Path
    node: RunningNode
    engine: SearchEngine
    webhook: WebhookReceiver
    prometheus_url: str = ""
    alertmanager_url: str = ""
    agent_ports: dict[str, int] = field(default_factory=dict)
    correlator_port: int = 0
    prometheus: LoggedProcess | None = None
    processes: list[LoggedProcess] = field(default_factory=list)
    moments: dict[str, float] = field(default_factory=dict)
    """time.monotonic() of each step, for the timings printed."""

    def agent_targets(self) -> list[str]:
        return [f"{HOSTS[host]}:{port}" for host, port in self.agent_ports.items()]

    def correlator_target(self) -> str:
        return f"{CORRELATOR_ADDRESS}:{self.correlator_port}"

    def took(self, since: str) -> float:
        return time.monotonic() - self.moments[since]

    def diagnostics(self) -> str:
        parts = [process.tail() for process in self.processes]
        for name, url in (
            ("prometheus alerts", f"{self.prometheus_url}/api/v1/alerts"),
            ("alertmanager alerts", f"{self.alertmanager_url}/api/v2/alerts"),
        ):
            try:
                parts.append(f"{name}: {fetch(url).decode()[:3000]}")
            except OSError as error:
                parts.append(f"{name}: {error}")
        posts = self.webhook.posts()
        parts.append(
            f"webhook posts ({len(posts)}):\n  "
            + "\n  ".join(json.dumps(post)[:600] for post in posts)
        )
        return "\n".join(parts)


def search_section(node: RunningNode, enabled: bool) -> list[str]:
    """[sinks.elasticsearch]: the agents ship there (`enabled`), the correlator reads there."""
    return [
        "[sinks.elasticsearch]",
        f"enabled = {json.dumps(enabled)}",
        'flavour = "opensearch"',
        f"hosts = [{json.dumps(node.url)}]",
        f'namespace = "{NAMESPACE}"',
        "batch_documents = 100",
    ]


def write_config(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def agent_config(folder: Path, host: str, port: int, node: RunningNode) -> Path:
    return write_config(
        folder / host / "npuwatch.toml",
        [
            "[agent]",
            f'host_name = "{host}"',
            f"state_directory = {json.dumps(str(folder / host / 'state'))}",
            'timezone = "UTC"',  # the zone the moved tree's times are written in
            "[sources]",
            f"roots = [{json.dumps(str(folder / host / 'logs'))}]",
            'idle_flush = "500ms"',
            "[devices]",
            "enabled = false",
            "[collective]",
            'heartbeat_interval = "2s"',
            *search_section(node, enabled=True),
            "[sinks.prometheus]",
            f'listen = "{HOSTS[host]}:{port}"',
        ],
    )


def correlator_config(folder: Path, port: int, node: RunningNode) -> Path:
    return write_config(
        folder / "correlate.toml",
        [
            *search_section(node, enabled=False),
            "[correlate]",
            'poll_interval = "1s"',
            f'listen = "{CORRELATOR_ADDRESS}:{port}"',
        ],
    )


def npuwatch(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "npuwatch", *arguments]


def es_setup(config: Path) -> None:
    """`npuwatch es setup` as an operator runs it: the templates and the ingest pipeline; the
    test node has no lifecycle plugin, which it says in a warning line."""
    done = subprocess.run(
        npuwatch("es", "setup", "--replicas", "0", "--config", str(config)),
        capture_output=True,
        text=True,
        timeout=120,
        env=agent_environment(),
        check=False,
    )
    said = done.stdout + done.stderr
    for installed in (
        "ingest pipeline npuwatch-ingested",
        f"npuwatch-logs-ascend-state-{NAMESPACE}",
    ):
        assert installed in done.stdout, said
    assert done.returncode == 0, said


def prometheus_config(stack: IncidentStack, with_agents: bool) -> dict[str, Any]:
    """deploy/prometheus/prometheus.yml made fast (1 s scrapes and evaluations), its scrape
    jobs unchanged but for the targets (each group keeps its labels: the example's cluster),
    the repository's alerts.yml and the test's Alertmanager."""
    example = yaml.safe_load(PROMETHEUS_EXAMPLE.read_text(encoding="utf-8"))
    targets = {CORRELATOR_JOB: [stack.correlator_target()]}
    if with_agents:
        targets[AGENT_JOB] = stack.agent_targets()
    jobs = []
    for job in example["scrape_configs"]:
        if job["job_name"] not in targets:
            continue
        (group,) = job["static_configs"]
        jobs.append(
            {
                **job,
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "static_configs": [{**group, "targets": targets[job["job_name"]]}],
            }
        )
    alertmanager = urllib.parse.urlsplit(stack.alertmanager_url).netloc
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": jobs,
    }


def example_cluster() -> str:
    """The `cluster` label prometheus.yml gives the agents (and, the same, the correlator)."""
    example = yaml.safe_load(PROMETHEUS_EXAMPLE.read_text(encoding="utf-8"))
    (agents,) = [job for job in example["scrape_configs"] if job["job_name"] == AGENT_JOB]
    return str(agents["static_configs"][0]["labels"]["cluster"])


def documents(engine: SearchEngine) -> tuple[int, int] | None:
    """(process documents, collective events) in the search engine; None before both exist."""
    try:
        processes = engine.count(
            state_index("topology", NAMESPACE), {"term": {"event.dataset": "ascend.topology"}}
        )
        events = engine.count(
            events_stream(NAMESPACE), {"exists": {"field": "ascend.collective.kind"}}
        )
    except Exception:  # the index is not there yet, or its shard not started
        return None
    return (processes, events) if processes and events else None


def wait_for_every_document(stack: IncidentStack) -> tuple[int, int]:
    """Until the agents' documents stop changing for 3 s (every rank's process documents and
    collective events shipped)."""
    seen: list[tuple[int, int] | None] = []

    def settled() -> tuple[int, int] | None:
        seen.append(documents(stack.engine))
        last = seen[-4:]
        return last[-1] if len(last) == 4 and last[-1] and len(set(last)) == 1 else None

    counts, _ = poll(settled, DOCUMENTS_WITHIN, interval=1.0)
    assert counts is not None, f"the agents' documents: {seen[-5:]}\n{stack.diagnostics()}"
    assert counts[0] >= 8, counts  # a process document per rank at least
    return counts


@pytest.fixture(scope="module")
@real_server("a single-node OpenSearch (tests/opensearch_node) for the correlator")
def search_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningNode]:
    running = start_node(tmp_path_factory.mktemp("opensearch"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
@real_server("Prometheus and Alertmanager (Debian packages) fed by two agents and a correlator")
def incident_stack(
    search_node: RunningNode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IncidentStack]:
    promtool = binary("promtool", "prometheus")
    folder = tmp_path_factory.mktemp("incident-alert")
    port_a, port_b, correlator_port, prometheus_port, alertmanager_port = free_ports(5)
    with ExitStack() as cleanup:
        webhook = WebhookReceiver()
        cleanup.callback(webhook.close)
        engine = connect(Connection("opensearch", (search_node.url,)))
        cleanup.callback(engine.close)
        stack = IncidentStack(
            folder=folder,
            node=search_node,
            engine=engine,
            webhook=webhook,
            prometheus_url=f"http://127.0.0.1:{prometheus_port}",
            alertmanager_url=f"http://127.0.0.1:{alertmanager_port}",
            agent_ports={"host-a": port_a, "host-b": port_b},
            correlator_port=correlator_port,
        )
        stack.moments["start"] = time.monotonic()

        def run(process: LoggedProcess) -> LoggedProcess:
            stack.processes.append(process)
            cleanup.callback(process.stop)
            return process

        # The agents, on the tree as if its timeouts were just written.
        es_setup(correlator_config(folder, correlator_port, search_node))
        delta = moved_to(datetime.now(timezone.utc).replace(tzinfo=None))
        agents = []
        for host, port in stack.agent_ports.items():
            (folder / host).mkdir()
            write_moved_tree(TREE / host, folder / host / "logs", delta)
            config = agent_config(folder, host, port, search_node)
            agents.append(
                run(
                    LoggedProcess(
                        f"npuwatch agent {host}",
                        npuwatch("agent", "--config", str(config)),
                        folder / host / "agent.log",
                        agent_environment(),
                    )
                )
            )
        stack.moments["written"] = time.monotonic()
        for agent, (host, port) in zip(agents, stack.agent_ports.items(), strict=True):
            agent.wait_ready(f"http://{HOSTS[host]}:{port}/metrics")
        counts = wait_for_every_document(stack)
        print(f"agents' documents (processes, events) {counts}: {stack.took('written'):.1f} s")

        # Alertmanager, and Prometheus scraping the correlator only, as it starts.
        alertmanager = run(alertmanager_process(folder, webhook, alertmanager_port))
        for address in HOSTS.values():
            backfill_up(promtool, folder / "prometheus-data", address, seconds=600)
        prometheus_yml = folder / "prometheus.yml"
        prometheus_yml.write_text(yaml.safe_dump(prometheus_config(stack, with_agents=False)))
        stack.prometheus = run(prometheus_process(folder, prometheus_yml, prometheus_port))
        alertmanager.wait_ready(f"{stack.alertmanager_url}/-/ready")
        stack.prometheus.wait_ready(f"{stack.prometheus_url}/-/ready")
        stack.moments["correlator"] = time.monotonic()
        correlator = run(
            LoggedProcess(
                "npuwatch correlate",
                npuwatch(
                    "correlate",
                    "--config",
                    str(correlator_config(folder, correlator_port, search_node)),
                ),
                folder / "correlate.log",
                agent_environment(),
            )
        )
        correlator.wait_ready(f"http://{stack.correlator_target()}/metrics")
        yield stack


def scrape_the_agents(stack: IncidentStack) -> None:
    """Prometheus, told again its configuration with the agents' job in it (SIGHUP), until it
    scrapes all three targets."""
    assert stack.prometheus is not None
    config = prometheus_config(stack, with_agents=True)
    (stack.folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    stack.prometheus.process.send_signal(signal.SIGHUP)

    def all_up() -> bool | None:
        targets = fetch_json(f"{stack.prometheus_url}/api/v1/targets")["data"]["activeTargets"]
        return True if len(targets) == 3 and all(t["health"] == "up" for t in targets) else None

    scraping, _ = poll(all_up, 30)
    assert scraping, f"Prometheus does not scrape the agents\n{stack.diagnostics()}"


def posted(stack: IncidentStack, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(path, alert) of every alert named in `names` the webhook has received."""
    return [
        (path, alert)
        for path, payload in stack.webhook.posts()
        if isinstance(payload, dict)
        for alert in payload.get("alerts", [])
        if alert["labels"].get("alertname") in names
    ]


def prometheus_alerts(stack: IncidentStack, state: str = "firing") -> list[dict[str, Any]]:
    alerts = fetch_json(f"{stack.prometheus_url}/api/v1/alerts")["data"]["alerts"]
    return [alert for alert in alerts if alert["state"] == state]


@pytest.fixture(scope="module")
def paged(incident_stack: IncidentStack) -> tuple[str, dict[str, Any]]:
    """The incident, once the webhook has it: (path, alert)."""

    def delivered() -> tuple[str, dict[str, Any]] | None:
        found = posted(incident_stack, {INCIDENT_ALERT})
        return found[0] if found else None

    found, _ = poll(delivered, PAGED_WITHIN)
    took = incident_stack.took("correlator")
    assert found is not None, (
        f"no {INCIDENT_ALERT} posted {took:.0f} s after the correlator started\n"
        f"{incident_stack.diagnostics()}"
    )
    print(f"{INCIDENT_ALERT} posted {took:.1f} s after the correlator started")
    return found


def correlator_incidents(stack: IncidentStack) -> list[str]:
    """The root-cause series the correlator serves."""
    body = fetch(f"http://{stack.correlator_target()}/metrics").decode()
    return [line for line in body.splitlines() if line.startswith("ascend_collective_incident_")]


def test_the_incident_is_paged_with_the_device_that_failed_first_and_the_ranks_waiting(
    incident_stack: IncidentStack, paged: tuple[str, dict[str, Any]]
) -> None:
    path, alert = paged
    assert path == "/npuwatch/critical"  # alertmanager.yml routes severity=critical there
    assert alert["status"] == "firing"
    series = correlator_incidents(incident_stack)
    ids = {m[1] for line in series if (m := re.search(r'incident="([^"]+)"', line))}
    assert len(ids) == 1, series
    assert alert["labels"] == {
        "alertname": INCIDENT_ALERT,
        "severity": "critical",
        "cluster": example_cluster(),
        "job": CORRELATOR_JOB,
        "incident": ids.pop(),
        "kind": "rdma_retransmission",
        "host": "host-b",
        "npu": "2",
        "rank": "6",
    }
    assert alert["annotations"]["summary"] == SUMMARY
    description = alert["annotations"]["description"]
    assert f"`npuwatch incident show {alert['labels']['incident']}`" in description
    assert "provisional" not in description  # every rank reported: settled at once


def test_the_per_rank_timeouts_fire_in_prometheus_and_alertmanager_holds_them_back(
    incident_stack: IncidentStack, paged: tuple[str, dict[str, Any]]
) -> None:
    stack = incident_stack
    scrape_the_agents(stack)
    stack.moments["agents scraped"] = time.monotonic()
    expected = {(name, address) for name in TIMEOUT_ALERTS for address in HOSTS.values()}

    def every_timeout_firing() -> list[dict[str, Any]] | None:
        firing = [a for a in prometheus_alerts(stack) if a["labels"]["alertname"] in TIMEOUT_ALERTS]
        seen = {(a["labels"]["alertname"], a["labels"]["instance"]) for a in firing}
        return firing if seen == expected else None

    firing, _ = poll(every_timeout_firing, TIMEOUTS_WITHIN - stack.took("written"))
    assert firing is not None, (
        f"per-rank timeouts firing in Prometheus {stack.took('written'):.0f} s after the tree "
        f"was written: not all of {sorted(expected)}\n{stack.diagnostics()}"
    )
    print(
        f"{len(firing)} per-rank timeout alerts firing in Prometheus "
        f"{stack.took('written'):.1f} s after the tree was written"
    )
    cluster = example_cluster()
    assert {alert["labels"].get("cluster") for alert in firing} == {cluster}

    # Alertmanager has each of them, inhibited by the incident.
    fingerprints: dict[str, str] = {}

    def all_held_back() -> list[dict[str, Any]] | None:
        held = fetch_json(f"{stack.alertmanager_url}/api/v2/alerts?inhibited=true")
        incident = [a for a in held if a["labels"]["alertname"] == INCIDENT_ALERT]
        fingerprints.update({a["labels"]["incident"]: a["fingerprint"] for a in incident})
        timeouts = [a for a in held if a["labels"]["alertname"] in TIMEOUT_ALERTS]
        labels = {
            (a["labels"]["alertname"], a["labels"]["instance"], a["labels"]["rule"])
            for a in timeouts
        }
        wanted = {
            (a["labels"]["alertname"], a["labels"]["instance"], a["labels"]["rule"]) for a in firing
        }
        return timeouts if labels >= wanted else None

    held, _ = poll(all_held_back, 30)
    assert held is not None, f"Alertmanager does not have the timeouts\n{stack.diagnostics()}"
    inhibitors = set(fingerprints.values())
    assert len(inhibitors) == 1, fingerprints
    for alert in held:
        assert alert["status"]["state"] == "suppressed", alert
        assert alert["status"]["inhibitedBy"] == sorted(inhibitors), alert

    # Not one of them is posted while the incident fires.
    time.sleep(HELD_BACK_FOR)
    assert posted(stack, TIMEOUT_ALERTS) == [], stack.diagnostics()
    still = [a for a in prometheus_alerts(stack) if a["labels"]["alertname"] == INCIDENT_ALERT]
    assert len(still) == 1, stack.diagnostics()
    print(f"held back for {HELD_BACK_FOR:.0f} s; test stack up {stack.took('start'):.1f} s")


def test_the_correlator_health_alerts_stay_quiet(
    incident_stack: IncidentStack, paged: tuple[str, dict[str, Any]]
) -> None:
    pending_or_firing = [
        alert
        for state in ("pending", "firing")
        for alert in prometheus_alerts(incident_stack, state)
        if alert["labels"]["alertname"] in CORRELATOR_ALERTS
    ]
    assert pending_or_firing == []
    assert posted(incident_stack, CORRELATOR_ALERTS) == []


READ_LAG_PANEL = "Correlator read lag"
"""The correlator keeps up with a few documents: its lag (the time since a round last read
every index to its end, set after each round) is well under its poll interval of 1 s."""
LATENCY_PANEL = "Time to first verdict"
"""A quantile of the histogram's increase over an hour: Prometheus may have first scraped the
correlator after its first verdict (no increase then, NaN), so it is asked to exist only."""


def test_the_correlator_panels_of_the_grafana_dashboard_show_the_incident(
    incident_stack: IncidentStack, paged: tuple[str, dict[str, Any]]
) -> None:
    _, alert = paged
    titles = set(correlator_panels())

    def answers() -> dict[str, list[dict[str, Any]]]:
        results: dict[str, list[dict[str, Any]]] = {}
        for title, expr in panel_queries():
            if title in titles:
                query = urllib.parse.urlencode({"query": as_grafana_sends_it(expr, ".*", "5m")})
                reply = fetch_json(f"{incident_stack.prometheus_url}/api/v1/query?{query}")
                results[title] = results.get(title, []) + reply["data"]["result"]
        return results

    results = answers()
    assert set(results) == titles
    assert all(results[title] for title in titles), results
    (open_by_kind,) = results["Open collective incidents"]
    assert open_by_kind["metric"] == {"cluster": example_cluster(), "kind": "rdma_retransmission"}
    assert float(open_by_kind["value"][1]) == 1
    (root,) = results["Root causes of open incidents"]
    labels = {key: alert["labels"][key] for key in ("incident", "kind", "host", "npu", "rank")}
    assert root["metric"] == {
        **labels,
        "cluster": example_cluster(),
        "provisional": "false",
    }
    assert float(root["value"][1]) == 7
    lags = [float(one["value"][1]) for one in results[READ_LAG_PANEL]]
    assert len(lags) == 1 and 0.0 <= lags[0] < 1.0, lags
    quantiles = [one["value"][1] for one in results[LATENCY_PANEL]]
    assert len(quantiles) == 2, results[LATENCY_PANEL]
