"""The `npuwatch agent` command: run the per-host service in the foreground.

Signals: SIGTERM or SIGINT drain and stop (a second one exits at once, which is safe: every
commit is a transaction); SIGHUP reloads the configuration and the rules without losing any
position. Under systemd (`Type=notify`) the agent says READY once the files are being followed,
pings the watchdog only while its reader, rules and journal threads are all alive, and says
STOPPING when it drains.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sqlite3
import sys
import time
import warnings
from types import FrameType
from typing import Any

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import Topology, build
from npuwatch.collector.roots import missing_roots
from npuwatch.config import Config, config_path_from, load_config
from npuwatch.journal.store import JournalUnavailable
from npuwatch.private_files import UnsafeFolder
from npuwatch.problems import Problems
from npuwatch.service.notify import Heartbeat, SystemdNotifier
from npuwatch.service.signal_requests import SignalRequests
from npuwatch.sinks.search.engine import quiet_client_logs
from npuwatch.speedups import ADVICE as SPEEDUPS_ADVICE
from npuwatch.speedups import speedups
from npuwatch.state_lock import StateDirectoryBusy

log = logging.getLogger("npuwatch.agent")


def _configure(args: argparse.Namespace) -> Config:
    """The configuration file with the command line's overrides; ConfigError (Problems)."""
    config = load_config(args.config or config_path_from(os.environ), os.environ)
    changes: dict[str, Any] = {}
    if args.root:
        changes["sources"] = config.sources.model_copy(update={"roots": args.root})
    if args.state_directory:
        changes["agent"] = config.agent.model_copy(update={"state_directory": args.state_directory})
    if args.json:
        console = config.sinks.console.model_copy(update={"format": "json"})
        changes["sinks"] = config.sinks.model_copy(update={"console": console})
    return config.model_copy(update=changes) if changes else config


def run_agent(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, format="npuwatch: %(levelname)s %(message)s", stream=sys.stderr
    )
    # watchdog logs an ERROR when its observer is stopped with events in flight, and warns when
    # a folder created in a burst is watched twice; the events are hints and the rescan covers
    # them, so neither is an operator's business.
    logging.getLogger("watchdog").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", "Callback with id .* already exists", RuntimeWarning)
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        quiet_client_logs()
    topology = _build(args)
    agent = _start_when_there_is_room(topology)
    return 0 if agent is None else _serve(agent, args)


FULL_DISK_RETRY_S = 5.0
"""How often a start on a full disk tries the journal again (as a running agent's commits do)."""


def _start_when_there_is_room(topology: Topology) -> Agent | None:
    """The agent, made once its journal can be opened: on a full disk it waits, as a running
    agent pauses reading (exiting made systemd restart it every 5 s, and each start said the
    same error). None when stopped (SIGTERM, SIGINT) while it waits."""
    requests = SignalRequests()
    notifier = SystemdNotifier.from_environ(os.environ)
    waiting_since: float | None = None
    previous = {
        number: signal.signal(number, lambda signum, frame: requests.ask_stop())
        for number in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        while not requests.stop:
            try:
                return Agent(topology)
            except (UnsafeFolder, StateDirectoryBusy) as refusal:
                raise Problems([str(refusal)]) from None
            except JournalUnavailable as error:
                if waiting_since is None:
                    waiting_since = time.monotonic()
                    log.warning(
                        "the journal in %s cannot be opened: %s; waiting for room (nothing is "
                        "read meanwhile; the log files wait on their disk), trying again every "
                        "%.0f s",
                        topology.journal.directory,
                        error,
                        FULL_DISK_RETRY_S,
                    )
                    notifier.ready("waiting for room on the state directory's disk")
                notifier.watchdog()
                requests.wait(FULL_DISK_RETRY_S)
            except (OSError, sqlite3.Error) as error:
                raise Problems(
                    [f"cannot start: {error} (is the state directory writable and not full?)"]
                ) from None
        return None
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        requests.close()
        if waiting_since is not None and not requests.stop:
            log.warning(
                "the journal has room again after %.0f s: starting",
                time.monotonic() - waiting_since,
            )
        notifier.close()


def _build(args: argparse.Namespace) -> Topology:
    """What `npuwatch config check` checks, built the same way; Problems when it is wrong."""
    return build(_configure(args), os.environ, console=sys.stdout if args.console else None)


STOP_GRACE_S = 10.0
"""How long stopping may take past the drain's time (the sinks' last joins, closing the journal,
the interpreter's exit) before the process leaves anyway."""


def _serve(agent: Agent, args: argparse.Namespace) -> int:
    requests = SignalRequests()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        if requests.stop:
            os._exit(128 + signum)  # a second signal: leave now; every commit is a transaction
        # Whatever would hold the stop past its time (a thread in C code that keeps the
        # interpreter's lock, a join that never returns), the process leaves within the unit's
        # TimeoutStopSec, from a thread of faulthandler's that needs no lock, with every
        # thread's stack on stderr to say where it hung. What was committed stays committed.
        faulthandler.dump_traceback_later(
            agent.topology.drain_timeout_s + STOP_GRACE_S, exit=True, file=sys.stderr
        )
        requests.ask_stop()

    def on_reload(signum: int, frame: FrameType | None) -> None:
        requests.ask_reload()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_reload)
    notifier = SystemdNotifier.from_environ(os.environ)
    heartbeat = (
        Heartbeat(notifier, lambda: agent.workers, notifier.watchdog_interval)
        if notifier.watchdog_interval is not None
        else None
    )
    agent.start()
    try:
        while not agent.wait_started(0.2):
            if requests.stop:
                break
        roots = ", ".join(map(str, agent.roots)) or "no roots"
        log.info("following %d files under %s", len(agent.tailer.files), roots)
        in_use = speedups()
        if not in_use.on:  # said once: it costs CPU next to the training job for as long as it runs
            log.warning("%s; %s", in_use.summary(), SPEEDUPS_ADVICE)
        for root in missing_roots(agent.topology.config.sources.roots):
            log.warning(
                "log root %s does not exist: nothing is read there until it does (followed "
                "once it appears); check sources.roots or --root",
                root,
            )
        if heartbeat is not None:
            heartbeat.start()
        notifier.ready(f"following {len(agent.tailer.files)} files")
        while not requests.stop:
            requests.wait(1.0)
            if requests.reload:
                requests.reload = False
                _reload(agent, args, notifier)
            dead = [thread.name for thread in agent.workers if not thread.is_alive()]
            if dead:
                # A stage cannot be drained without its thread: leave, and let systemd (or
                # the operator) start the agent again, which reads from the last commit.
                log.error("worker thread %s died; exiting so that a restart recovers", dead[0])
                notifier.stopping(f"worker thread {dead[0]} died")
                return 1
            notifier.status(f"following {len(agent.tailer.files)} files")
        notifier.stopping("draining")
        log.info("stopping: draining what was read into the journal")
        drained = agent.stop()
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        notifier.close()
        requests.close()
    return 0 if drained else 1


def _reload(agent: Agent, args: argparse.Namespace, notifier: SystemdNotifier) -> None:
    notifier.notify("RELOADING=1")
    try:
        topology = _build(args)
    except Problems as problems:
        for problem in problems.lines():
            log.error("configuration not reloaded: %s", problem)
    else:
        for change in agent.reload(topology):
            keys = ", ".join(change.keys)
            if change.applied:
                log.info("configuration [%s] applied: %s", change.section, keys)
            else:
                log.warning(
                    "configuration [%s] changed (%s): restart the agent to apply it",
                    change.section,
                    keys,
                )
        log.info("configuration reloaded")
    notifier.ready()
