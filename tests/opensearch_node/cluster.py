"""Start a real OpenSearch 2.19.6 cluster of several nodes for tests (standard library only).

    from tests.opensearch_node.cluster import start_cluster

    with start_cluster(tmp_path / "os", size=3) as cluster:
        cluster.urls                      # every node's http://127.0.0.1:PORT, in order
        cluster.nodes[2].kill()           # SIGKILL
        cluster.nodes[2].start_again()    # same data, ports and name: it rejoins
        cluster.wait_for("green", nodes=3)

Each node is a TestNode of its own (a JVM, its data under ``HOME/node-N``) with its HTTP and
transport ports fixed on 127.0.0.1, the others' transport ports as discovery seed hosts, and
every node eligible as cluster manager (three tolerate the loss of one). The nodes start
together: a member prints READY only once the cluster has formed (or after 30 s).
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.opensearch_node.launcher import (
    DEFAULT_JVM_OPTS,
    NodeError,
    RunningNode,
    await_ready,
    launch,
    node_command,
)

CLUSTER_JVM_OPTS: tuple[str, ...] = (
    "-Xms384m",
    "-Xmx384m",
    *(option for option in DEFAULT_JVM_OPTS if not option.startswith("-Xm")),
)
"""Three JVMs on two cores: a small heap each (the tests' data is a few tens of MB)."""

QUICK_START_JVM_OPTS: tuple[str, ...] = (*CLUSTER_JVM_OPTS, "-XX:TieredStopAtLevel=1")
"""For tests: the client compiler only, so that a node starts in about half the time (6.5 s
against 11–12 s alone on two cores) for a lower peak throughput; benchmarks use
CLUSTER_JVM_OPTS."""


class RunningCluster:
    """Started nodes forming one cluster; ``nodes[i]`` is named ``names[i]``."""

    def __init__(self, nodes: Sequence[RunningNode], names: Sequence[str]) -> None:
        self.nodes = list(nodes)
        self.names = list(names)

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    def running(self) -> list[RunningNode]:
        return [node for node in self.nodes if node.process.poll() is None]

    def request(self, path: str, timeout_s: float = 30, method: str = "GET") -> Any:
        """``method path`` (JSON answer) on the first node that is running and answers."""
        problems = []
        for node in self.running():
            asked = urllib.request.Request(node.url + path, method=method)
            try:
                with urllib.request.urlopen(asked, timeout=timeout_s) as answer:
                    body = answer.read()
                return json.loads(body) if body.strip() else None
            except urllib.error.HTTPError as error:
                problems.append(f"{node.url}: HTTP {error.code} {error.read()[:300]!r}")
            except (urllib.error.URLError, OSError) as error:
                problems.append(f"{node.url}: {error}")
        raise NodeError(f"{method} {path}: no node answered: {problems}")

    def wait_for(self, status: str = "green", nodes: int | None = None, timeout_s: int = 60) -> Any:
        """Wait (on the engine's side) until the cluster is at least ``status`` with ``nodes``
        nodes (all of them by default); its health. NodeError when it is not in time."""
        wanted = len(self.nodes) if nodes is None else nodes
        health = self.request(
            f"/_cluster/health?wait_for_status={status}&wait_for_nodes={wanted}"
            f"&wait_for_no_initializing_shards=true&timeout={timeout_s}s",
            timeout_s=timeout_s + 10,
        )
        if health.get("timed_out"):
            raise NodeError(f"cluster not {status} with {wanted} nodes in {timeout_s}s: {health}")
        return health

    def cluster_manager(self) -> RunningNode:
        """The node elected cluster manager now."""
        (elected,) = self.request("/_cat/cluster_manager?format=json")
        return self.nodes[self.names.index(elected["node"])]

    def name_of(self, node: RunningNode) -> str:
        return self.names[self.nodes.index(node)]

    def elect_another_cluster_manager(self, node: RunningNode, timeout_s: float = 60) -> None:
        """If ``node`` is the cluster manager, make it step down (a voting exclusion, withdrawn
        once another node is elected); ``node`` stays in the cluster."""
        if self.cluster_manager() is not node:
            return
        self.request(
            f"/_cluster/voting_config_exclusions?node_names={self.name_of(node)}", method="POST"
        )
        deadline = time.monotonic() + timeout_s
        try:
            while self.cluster_manager() is node:
                if time.monotonic() > deadline:
                    raise NodeError(f"{self.name_of(node)} is still the cluster manager")
                time.sleep(0.2)
        finally:
            self.request(
                "/_cluster/voting_config_exclusions?wait_for_removal=false", method="DELETE"
            )

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM every running node at once, then wait for each (SIGKILL after the time)."""
        for node in self.running():
            with contextlib.suppress(ProcessLookupError):
                node.process.terminate()
        for node in self.nodes:
            node.stop(timeout_s)

    def __enter__(self) -> RunningCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RunningCluster({dict(zip(self.names, self.urls, strict=True))})"


def start_cluster(
    home: Path,
    size: int = 3,
    timeout_s: float = 180,
    *,
    cluster_name: str = "npuwatch-cluster",
    jvm_opts: Sequence[str] = CLUSTER_JVM_OPTS,
) -> RunningCluster:
    """Build if needed, start ``size`` nodes with their data under ``home/node-N``, wait until
    every one answers and the cluster is green. NodeError (every node killed) when one exits or
    the time runs out."""
    home = Path(home).resolve()
    names = [f"node-{number}" for number in range(size)]
    ports = _unused_ports(2 * size)
    http_ports, transport_ports = ports[:size], ports[size:]
    seeds = ",".join(f"127.0.0.1:{port}" for port in transport_ports)
    nodes: list[RunningNode] = []
    launched = []
    try:
        for name, http, transport in zip(names, http_ports, transport_ports, strict=True):
            member = [
                *("--node-name", name, "--transport-port", str(transport)),
                *("--seed-hosts", seeds, "--initial-cluster-manager-nodes", ",".join(names)),
            ]
            command = node_command(
                home / name, http, cluster_name=cluster_name, jvm_opts=jvm_opts, options=member
            )
            (home / name).mkdir(parents=True, exist_ok=True)
            log_path = home / name / "node.log"
            log_path.write_bytes(b"")
            process, begins = launch(command, home / name, log_path)
            launched.append((process, begins, log_path, http, command))
        for process, begins, log_path, http, command in launched:
            url = await_ready(process, log_path, begins, timeout_s, http)
            nodes.append(RunningNode(url, process, log_path.parent, log_path, command))
        cluster = RunningCluster(nodes, names)
        cluster.wait_for("green", timeout_s=int(timeout_s))
    except BaseException:
        for process, *_ in launched:
            if process.poll() is None:
                process.kill()
            process.wait()
        raise
    return cluster


def _unused_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 below the kernel's ephemeral range, so that no outgoing
    connection takes one while its node is down between a kill and a start."""
    low, _ = _ephemeral_range()
    ports: list[int] = []
    while len(ports) < count:
        port = random.randrange(max(1024, low - 12_000), low)
        if port in ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    return ports


def _ephemeral_range() -> tuple[int, int]:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii")
        low, high = (int(part) for part in text.split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high
