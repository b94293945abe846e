"""Collections of hosts' logs, journaled by real `npuwatch agent` processes (one a host) and
read back with `npuwatch correlate --journal`, beside `npuwatch scan` of the same collection.

The hosts are split the way `scan` splits them (analysis/scan_hosts.py): a collection's
first-level folders are its hosts, named after the folders; a folder that is one host's tree is
one host, which scan is told the name of with `--host` (an agent always has a host name).

The agent has no one-shot mode: each one follows a copy of its host's folder until its journal's
checkpoints say every file it follows was journaled to its end, and is then stopped with
SIGTERM, which closes every open failure block and writes every changed process document (what
a job that stopped writing and an agent stopped later would leave).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from npuwatch.analysis.scan_hosts import collection_base, collection_hosts
from npuwatch.collector.discovery import FileFilter
from npuwatch.journal.segment import Segment
from npuwatch.journal.store import list_segments
from tests.npuwatch_command import clean_environment, run_npuwatch


def environment() -> dict[str, str]:
    """The commands' environment: no NPUWATCH_* setting of whoever runs the tests but the
    session's rule cache. Both sides read CANN's zoneless times as UTC (the agents by their
    configuration, scan by `--timezone UTC`); TZ too, for anything else that asks the host."""
    return clean_environment(TZ="UTC", NPUWATCH_CACHE=os.environ.get("NPUWATCH_CACHE", ""))


READ_TIMEOUT_S = 30.0
"""An agent that has not journaled its files to their end by then is stopped anyway, and that
is said."""
_FOLLOWING = re.compile(r"INFO following (\d+) files under ")
STOP_TIMEOUT_S = 30.0


class CommandFailed(Exception):
    """`scan` or `correlate` did not run as it should: not a difference between them."""


@dataclass(frozen=True)
class Collection:
    """A collection as scan sees it: its hosts and their folders."""

    root: Path
    hosts: dict[str, Path]
    single: bool
    """One host's tree (not a folder of host folders): its host is named by the caller."""

    @property
    def scan_arguments(self) -> list[str]:
        named = ["--host", *self.hosts] if self.single else []
        return [str(self.root), "--json", "--timezone", "UTC", *named]


def split_hosts(root: Path) -> Collection | str:
    """The collection at `root`, split into hosts by scan's own rule; or why agents cannot
    reproduce what scan reads there."""
    names = collection_hosts(root)
    if names is None:
        return Collection(root, {root.name: root}, single=True)
    base = collection_base(root)
    loose = sorted(path.name for path in base.iterdir() if not path.is_dir())
    if any(FileFilter().wants(name, name) for name in loose):
        return (
            f"files outside every host folder ({', '.join(loose)}): scan reads them as no "
            "host's, and an agent always names its host"
        )
    return Collection(root, {name: base / name for name in names}, single=False)


def agent_config(host: str, logs: Path, state: Path) -> str:
    """A real agent's configuration, as a site would write it, with short pauses: follow
    `logs` as `host`, journal in `state`; no device polling (no npu-smi here), no port."""
    return f"""
[agent]
host_name = {json.dumps(host)}
state_directory = {json.dumps(str(state))}
timezone = "UTC"
[sources]
roots = [{json.dumps(str(logs))}]
rescan_interval = "300ms"
idle_flush = "200ms"
[journal]
commit_interval = "50ms"
sync = "normal"
[devices]
enabled = false
[sinks.prometheus]
enabled = false
"""


@dataclass
class RunningAgent:
    host: str
    logs: Path
    state: Path
    process: subprocess.Popen[bytes]
    stderr: Path
    log: IO[bytes]

    def following(self) -> int | None:
        """How many files the agent said it follows once its first walk was done (its signal
        handlers are set by then), or None before."""
        said = _FOLLOWING.search(self.stderr.read_text("utf-8", "replace"))
        return int(said[1]) if said else None

    def wanted(self) -> dict[str, int]:
        """The files under its folder that an agent follows (its default patterns), by path:
        their sizes."""
        wanted = FileFilter()
        return {
            str(path): path.stat().st_size
            for path in self.logs.rglob("*")
            if path.is_file() and wanted.wants(path.name, str(path.relative_to(self.logs)))
        }

    def unread(self) -> list[str]:
        """The files the agent follows that its journal does not hold to their end yet."""
        sizes = self.wanted()
        done = checkpointed(self.state / "journal")
        return sorted(
            str(Path(path).relative_to(self.logs))
            for path, size in sizes.items()
            if size and done.get(path, -1) < size
        )


def checkpointed(journal: Path) -> dict[str, int]:
    """How far each file is journaled (path → offset), by the newest segment that says it; empty
    while the agent is still making its first segment."""
    for sequence, path in reversed(list_segments(journal) if journal.is_dir() else []):
        try:
            segment = Segment(path, sequence, readonly=True, being_made=True)
        except (sqlite3.Error, FileNotFoundError):
            return {}
        try:
            if segment.has_checkpoints():
                return {c.path: c.offset for c in segment.checkpoints()}
        except sqlite3.Error:  # its tables are being made
            return {}
        finally:
            segment.close()
    return {}


def start_agent(host: str, folder: Path, work: Path) -> RunningAgent:
    """`npuwatch agent` following a copy of `folder` as `host`."""
    work = work.resolve()  # the path the agent's checkpoints name
    logs = work / host / "logs"
    shutil.copytree(folder, logs, symlinks=True)  # copy2: the modification times too
    state = work / host / "state"
    config = work / host / "npuwatch.toml"
    config.write_text(agent_config(host, logs, state), "utf-8")
    stderr = work / host / "agent.stderr"
    log = stderr.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "npuwatch", "agent", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=environment(),
    )
    return RunningAgent(host, logs, state, process, stderr, log)


def start_scan(collection: Collection) -> subprocess.Popen[str]:
    """`npuwatch scan COLLECTION --json`, run while the agents read."""
    return subprocess.Popen(
        [sys.executable, "-m", "npuwatch", "scan", *collection.scan_arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )


@dataclass(frozen=True)
class Outcome:
    """Both sides' incidents of a collection, and what went wrong with its agents."""

    live: list[dict[str, Any]]
    offline: list[dict[str, Any]]
    wrong: list[str]


@dataclass
class Started:
    """A collection's agents (one a host) and its scan, started."""

    collection: Collection
    agents: list[RunningAgent]
    scan: subprocess.Popen[str]

    @classmethod
    def start(cls, collection: Collection, work: Path) -> Started:
        started = cls(collection, [], start_scan(collection))
        try:
            for host, folder in collection.hosts.items():
                started.agents.append(start_agent(host, folder, work))
        except BaseException:
            started.abandon()
            raise
        return started

    def finish(self) -> Outcome:
        """Each agent stopped once it journaled its files to their end, then `correlate
        --journal` over their journals; and scan's incidents."""
        try:
            wrong = self._stop_agents_when_read()
            offline = scan_incidents(self.scan)
        finally:
            self.abandon()
        live = correlate_incidents([agent.state for agent in self.agents])
        return Outcome(live, offline, wrong)

    def _stop_agents_when_read(self) -> list[str]:
        """What went wrong: an agent that exited before it was stopped, failed to stop, never
        read a file to its end, or logged a warning."""
        wrong: list[str] = []
        waiting = list(self.agents)
        deadline = time.monotonic() + READ_TIMEOUT_S
        while waiting and time.monotonic() < deadline:
            for agent in list(waiting):
                if agent.process.poll() is not None:
                    wrong.append(f"{agent.host}: the agent exited by itself")
                    waiting.remove(agent)
                    continue
                following = agent.following()
                if following is not None and not agent.unread():
                    # (an empty file is followed once it has a byte: there is nothing to tell
                    # it by before)
                    files = sum(1 for size in agent.wanted().values() if size)
                    if following != files:
                        wrong.append(
                            f"{agent.host}: the agent follows {following} files, "
                            f"not the {files} not empty of its folder"
                        )
                    agent.process.send_signal(signal.SIGTERM)
                    waiting.remove(agent)
            if waiting:
                time.sleep(0.05)
        for agent in waiting:
            wrong.append(f"{agent.host}: not journaled to their end: {agent.unread()}")
            agent.process.send_signal(signal.SIGTERM)
        for agent in self.agents:
            try:
                code = agent.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                wrong.append(f"{agent.host}: the agent did not stop within {STOP_TIMEOUT_S} s")
                continue
            if code != 0:
                wrong.append(f"{agent.host}: the agent exited with {code}")
        for agent in self.agents:
            for line in agent.stderr.read_text("utf-8", "replace").splitlines():
                if " INFO " not in line:
                    wrong.append(f"{agent.host}: {line}")
        return wrong

    def abandon(self) -> None:
        """End what still runs (nothing, after `finish`)."""
        processes: list[subprocess.Popen[Any]] = [self.scan]
        for process in processes + [agent.process for agent in self.agents]:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        for agent in self.agents:
            agent.log.close()


def scan_incidents(scan: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = scan.communicate(timeout=120)
    if scan.returncode not in (0, 1):
        raise CommandFailed(f"scan exited with {scan.returncode}: {err}")
    return list(json.loads(out)["incidents"])


def correlate_incidents(states: list[Path]) -> list[dict[str, Any]]:
    done = run_npuwatch("correlate", "--journal", *map(str, states), "--json", env=environment())
    if done.returncode not in (0, 1):
        raise CommandFailed(f"correlate exited with {done.returncode}: {done.stderr}")
    return list(json.loads(done.stdout)["incidents"])


class StartsAhead:
    """Starts the agents and the scan of the collection of the next test while a test waits for
    its own: their start is most of a collection's time, and takes the cores that the test
    before would leave idle while its agents read and stop. `outcome(root)` starts that
    collection (unless started) and the next `ahead` in `roots` (the order the tests run in),
    then finishes it."""

    def __init__(self, roots: list[Path], work: Callable[[], Path], ahead: int = 1) -> None:
        self._roots = roots
        self._work = work
        self._ahead = ahead
        self._started: dict[Path, Started] = {}

    def outcome(self, root: Path) -> Outcome:
        at = self._roots.index(root) if root in self._roots else len(self._roots)
        for next_root in [root, *self._roots[at + 1 : at + 1 + self._ahead]]:
            if next_root not in self._started:
                collection = split_hosts(next_root)
                assert not isinstance(collection, str), collection
                self._started[next_root] = Started.start(collection, self._work())
        return self._started.pop(root).finish()

    def close(self) -> None:
        """End the agents and scans started for tests that did not run (a test stopped the
        session)."""
        for started in self._started.values():
            started.abandon()
        self._started.clear()


PLACE_KEYS = ("host", "rank", "device", "pid", "address", "has_logs")


def place(found: dict[str, Any]) -> dict[str, Any]:
    return {key: found.get(key) for key in PLACE_KEYS}


def decided(incident: dict[str, Any]) -> dict[str, Any]:
    """What an incident decides: its kind, code, communicator and confidence, its root cause and
    waiting chain in their order, its victims as a set; each place by host, rank, device, pid,
    address and whether it left logs.

    Left out: the evidence, whose file paths differ by design (the agents read copies of the
    host folders, scan names the files under its root), the summary (worded from the places
    compared here) and the times."""
    return {
        "kind": incident["kind"],
        "faultdiag_code": incident["faultdiag_code"],
        "communicator": incident["communicator"],
        "confidence": incident["confidence"],
        "root_cause": [place(p) for p in incident["root_cause"]],
        "waiting_chain": [place(p) for p in incident["waiting_chain"]],
        "victims": sorted(
            (place(p) for p in incident["victims"]), key=lambda p: json.dumps(p, sort_keys=True)
        ),
    }


def differences(live: list[dict[str, Any]], offline: list[dict[str, Any]]) -> list[str]:
    """How the live incidents differ from scan's, one line a difference."""
    said = []
    if len(live) != len(offline):
        said.append(
            f"{len(live)} live incidents, {len(offline)} offline: live "
            f"{[i['kind'] for i in live]}, offline {[i['kind'] for i in offline]}"
        )
    for number, (mine, theirs) in enumerate(zip(live, offline, strict=False), 1):
        a, b = decided(mine), decided(theirs)
        for key in a:
            if a[key] != b[key]:
                said.append(f"incident {number} {key}: live {a[key]} != offline {b[key]}")
    return said
