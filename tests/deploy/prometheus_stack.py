"""A real Prometheus and Alertmanager (Debian's packages) for end-to-end alert tests: their
configurations, derived from the examples in deploy/prometheus; the server processes; and a
webhook receiver that records what Alertmanager posts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import yaml

REPOSITORY = Path(__file__).resolve().parents[2]
DEPLOY = REPOSITORY / "deploy" / "prometheus"
ALERTS = DEPLOY / "alerts.yml"
PROMETHEUS_EXAMPLE = DEPLOY / "prometheus.yml"
ALERTMANAGER_EXAMPLE = DEPLOY / "alertmanager.yml"
JOB = "npuwatch"
INSTANCE = "127.0.0.1"
"""The agent's address without the port: prometheus.yml's relabelling."""
"""The scrape job the alerts select (`up{job="npuwatch"}`)."""

T = TypeVar("T")


def binary(name: str, package: str, *other_names: str) -> str:
    """The path of an installed program; the test fails (it does not skip) when it is missing."""
    for candidate in (name, *other_names):
        found = shutil.which(candidate)
        if found is not None:
            return found
    pytest.fail(
        f"{name} is not installed, so the alerts cannot be tested end to end: install Debian's "
        f"{package} package (apt-get install -y {package})"
    )


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 now, for servers that must be told theirs."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def fetch(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def fetch_json(url: str) -> Any:
    return json.loads(fetch(url))


def poll(
    attempt: Callable[[], T | None], timeout: float, interval: float = 0.5
) -> tuple[T | None, float]:
    """Call `attempt` until it returns something other than None or `timeout` seconds pass;
    return what it returned (None on timeout) and the seconds it took."""
    started = time.monotonic()
    while True:
        try:
            found = attempt()
        except (OSError, ValueError):  # not up yet, or a half-written answer
            found = None
        elapsed = time.monotonic() - started
        if found is not None or elapsed >= timeout:
            return found, elapsed
        time.sleep(interval)


class LoggedProcess:
    """A server run as a child process with its output in a log file; stopped with SIGTERM,
    then SIGKILL."""

    def __init__(
        self, name: str, command: list[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
            )

    def wait_ready(self, url: str, timeout: float = 30.0) -> None:
        """Wait until `url` answers 200; fail with the log if the process exits or never does."""

        def answered() -> bool | None:
            if self.process.poll() is not None:
                return False
            fetch(url, timeout=2.0)
            return True

        ready, waited = poll(answered, timeout, interval=0.2)
        if not ready:
            state = "exited" if self.process.poll() is not None else "is still starting"
            raise AssertionError(
                f"{self.name} {state}: {url} did not answer within {waited:.0f} s\n{self.tail()}"
            )

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            text = f"(no log: {error})"
        last = "\n".join(text.splitlines()[-lines:])
        return f"--- last lines of {self.name}'s log ({self.log_path}) ---\n{last}"

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _WebhookHandler)
        self.lock = threading.Lock()
        self.posts: list[tuple[str, Any]] = []


class _WebhookHandler(BaseHTTPRequestHandler):
    server: _RecordingServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            payload = json.loads(body)
        except ValueError:
            payload = body.decode("utf-8", errors="replace")
        with self.server.lock:
            self.server.posts.append((self.path, payload))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the posts are kept, not printed."""


class WebhookReceiver:
    """An HTTP server on a free port that keeps every JSON document POSTed to it."""

    def __init__(self) -> None:
        self._server = _RecordingServer()
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook-receiver", daemon=True
        )
        self._thread.start()

    def posts(self) -> list[tuple[str, Any]]:
        """(path, payload) of every POST so far."""
        with self._server.lock:
            return list(self._server.posts)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def write_prometheus_config(path: Path, agent_port: int, alertmanager_port: int) -> None:
    """The example prometheus.yml made fast: a 1 s scrape and evaluation, the repository's
    alerts.yml, the agent on `agent_port` (with the example's relabelling, so `instance` is the
    host without the port) and the test's Alertmanager."""
    example = yaml.safe_load(PROMETHEUS_EXAMPLE.read_text(encoding="utf-8"))
    (job,) = [scrape for scrape in example["scrape_configs"] if scrape["job_name"] == JOB]
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]
        },
        "scrape_configs": [
            {
                **job,
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [f"127.0.0.1:{agent_port}"]}],
            }
        ],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def write_alertmanager_config(path: Path, webhook: WebhookReceiver) -> None:
    """The example alertmanager.yml (its routes by severity, inhibitions and receivers) with
    every webhook pointed at `webhook` (same path) and 1 s group waits and intervals."""
    config = yaml.safe_load(ALERTMANAGER_EXAMPLE.read_text(encoding="utf-8"))
    routes = [config["route"]]
    while routes:
        route = routes.pop()
        if "group_wait" in route or route is config["route"]:
            route["group_wait"] = "1s"
        if "group_interval" in route or route is config["route"]:
            route["group_interval"] = "1s"
        routes += route.get("routes", [])
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"http://127.0.0.1:{webhook.port}{urlsplit(hook['url']).path}"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def backfill_up(promtool: str, storage: Path, instance: str, seconds: int, step: int = 1) -> None:
    """Write into `storage` the `up` samples of a Prometheus that has been scraping the agent
    (job npuwatch, `instance`) for the last `seconds`, as promtool's backfill."""
    now = int(time.time())
    samples = "".join(
        f'up{{job="{JOB}",instance="{instance}"}} 1 {moment}\n'
        for moment in range(now - seconds, now, step)
    )
    source = storage.with_name(storage.name + "-up.om")
    source.write_text(f"# TYPE up gauge\n{samples}# EOF\n", encoding="utf-8")
    storage.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(storage)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"promtool backfill failed:\n{result.stdout}{result.stderr}"


def agent_environment() -> dict[str, str]:
    """The environment of the agent process: none of the caller's NPUWATCH_* overrides (the
    Elasticsearch sink stays off); this checkout's package first on PYTHONPATH, whatever
    checkout an editable install points at, and the repository (for `tests.`)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NPUWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPOSITORY / "src"), str(REPOSITORY)])
    return env


@dataclass
class AlertingStack:
    """Alertmanager, Prometheus (with alerts.yml, scraping the agent) and the agent, running
    until the ExitStack they were started in closes."""

    prometheus_url: str
    agent_url: str
    agent_started: float
    """When the agent process was started (time.monotonic)."""
    webhook: WebhookReceiver
    metric_prefixes: tuple[str, ...]
    """The agent's metrics a failure message shows."""
    processes: list[LoggedProcess] = field(default_factory=list)

    def diagnostics(self) -> str:
        """What each part saw, for a failure message."""
        return stack_diagnostics(
            self.agent_url, self.metric_prefixes, self.prometheus_url, self.webhook, self.processes
        )

    def seconds_left(self, within: float) -> float:
        """What is left of `within` seconds counted from the agent's start."""
        return max(0.0, within - (time.monotonic() - self.agent_started))


def start_alerting_stack(
    cleanup: ExitStack,
    folder: Path,
    webhook: WebhookReceiver,
    history_s: int,
    start_agent: Callable[[int], LoggedProcess],
    metric_prefixes: tuple[str, ...],
) -> AlertingStack:
    """Start Alertmanager posting to `webhook`, the agent (`start_agent(its metrics port)`) and
    Prometheus with `history_s` seconds of the agent's `up` backfilled (none: Prometheus starts
    scraping the agent as the test begins), and wait until each answers. A failure message shows
    the agent's metrics that start with `metric_prefixes`."""
    promtool = binary("promtool", "prometheus")
    agent_port, prometheus_port, alertmanager_port = free_ports(3)
    processes: list[LoggedProcess] = []

    def run(process: LoggedProcess) -> LoggedProcess:
        processes.append(process)
        cleanup.callback(process.stop)
        return process

    alertmanager = run(alertmanager_process(folder, webhook, alertmanager_port))
    write_prometheus_config(folder / "prometheus.yml", agent_port, alertmanager_port)
    if history_s:
        backfill_up(promtool, folder / "prometheus-data", INSTANCE, seconds=history_s)
    stack = AlertingStack(
        prometheus_url=f"http://127.0.0.1:{prometheus_port}",
        agent_url=f"http://127.0.0.1:{agent_port}/metrics",
        agent_started=time.monotonic(),
        webhook=webhook,
        metric_prefixes=metric_prefixes,
        processes=processes,
    )
    agent = run(start_agent(agent_port))
    prometheus = run(prometheus_process(folder, folder / "prometheus.yml", prometheus_port))
    alertmanager.wait_ready(f"http://127.0.0.1:{alertmanager_port}/-/ready")
    agent.wait_ready(stack.agent_url)
    prometheus.wait_ready(f"{stack.prometheus_url}/-/ready")
    return stack


def alertmanager_process(folder: Path, webhook: WebhookReceiver, port: int) -> LoggedProcess:
    """Alertmanager (the Debian package) posting every alert to `webhook`, its files under
    `folder`."""
    alertmanager = binary("prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
    write_alertmanager_config(folder / "alertmanager.yml", webhook)
    return LoggedProcess(
        "alertmanager",
        [
            alertmanager,
            f"--config.file={folder / 'alertmanager.yml'}",
            f"--storage.path={folder / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",  # a single Alertmanager: no gossip
        ],
        folder / "alertmanager.log",
    )


def prometheus_process(folder: Path, config: Path, port: int) -> LoggedProcess:
    """Prometheus (the Debian package) with `config`, its data and log under `folder`."""
    return LoggedProcess(
        "prometheus",
        [
            binary("prometheus", "prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        folder / "prometheus.log",
    )


def stack_diagnostics(
    agent_url: str,
    prefixes: tuple[str, ...],
    prometheus_url: str,
    webhook: WebhookReceiver,
    processes: list[LoggedProcess],
) -> str:
    """What each part of an alerting stack saw, for a failure message: the agent's metric
    lines that start with `prefixes`, Prometheus's alerts, the webhook's posts and the end of
    each process's log."""
    parts = [
        _agent_metrics(agent_url, prefixes),
        _prometheus_alerts(prometheus_url),
        _webhook_posts(webhook),
    ]
    parts += [process.tail() for process in processes]
    return "\n".join(parts)


def _agent_metrics(url: str, prefixes: tuple[str, ...]) -> str:
    try:
        body = fetch(url).decode()
    except OSError as error:
        return f"agent /metrics: {error}"
    counted = [line for line in body.splitlines() if line.startswith(prefixes)]
    return f"agent's {', '.join(prefixes)}:\n  " + ("\n  ".join(counted) or "(none)")


def _prometheus_alerts(url: str) -> str:
    try:
        alerts = fetch_json(f"{url}/api/v1/alerts")["data"]["alerts"]
    except (OSError, ValueError, KeyError) as error:
        return f"prometheus /api/v1/alerts: {error}"
    listed = [f"{alert['state']} {alert['labels']}" for alert in alerts]
    return "prometheus alerts:\n  " + ("\n  ".join(listed) or "(none)")


def _webhook_posts(webhook: WebhookReceiver) -> str:
    posts = webhook.posts()
    return f"webhook posts ({len(posts)}):\n  " + "\n  ".join(
        json.dumps(post)[:500] for post in posts
    )
