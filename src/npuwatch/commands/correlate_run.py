"""`npuwatch correlate`: the cluster service, one round of it, or the journals of several hosts.

Signals: SIGTERM or SIGINT end the service after the round under way, waiting for it at most
ROUND_GRACE_S (a round is a handful of requests of up to [sinks.elasticsearch] timeout each; a
node that hangs would hold the stop for minutes, past systemd's TimeoutStopSec). A round cut
short loses nothing: the service keeps no state, the next start reads everything again from the
search engine, and every incident write is whole or not made. Under systemd (`Type=notify`) it
says READY after its first round and pings the watchdog while its rounds go on.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from npuwatch.cluster.incident_document import incident_from_document
from npuwatch.cluster.journals import JournalUnreadable, journal_incidents
from npuwatch.cluster.metrics import CorrelatorMetrics
from npuwatch.cluster.service import CorrelateSettings, CorrelatorService
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.config import Config, config_path_from, load_config
from npuwatch.config.loading import ConfigUnreadable
from npuwatch.correlation.incident import Incident
from npuwatch.correlation.report_text import render_incidents
from npuwatch.journal.layout import segment_files
from npuwatch.parsers.timestamps import resolve_timezone
from npuwatch.problems import Problems
from npuwatch.process_pool import usable_cores
from npuwatch.service.notify import SystemdNotifier
from npuwatch.sinks.prometheus.exporter import MetricsServer
from npuwatch.sinks.prometheus.web_config import WebSecurity, load_web_config
from npuwatch.sinks.search.engine import SearchEngine, describe_error, quiet_client_logs
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.settings import SECTION, SecretUnreadable, connection_from
from npuwatch.terminal import Palette, wants_colour

log = logging.getLogger("npuwatch.correlate")

ROUND_GRACE_S = 10.0
"""After a stop, how long the round under way may go on before the service ends without it."""


def run_correlate(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, format="npuwatch: %(levelname)s %(message)s", stream=sys.stderr
    )
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        quiet_client_logs()
    if args.journal:
        jobs = args.jobs if args.jobs is not None else usable_cores()
        return _print(_from_journals(args.journal, jobs), args)
    if args.check:
        return _checked(args)
    config = load_config(args.config or config_path_from(os.environ), os.environ)
    engine = engine_of(config)
    web = config.correlate.web_config_file
    security = load_web_config(web) if web is not None else None
    metrics = CorrelatorMetrics()
    service = CorrelatorService(engine, settings_of(config), metrics, input_is_complete=args.once)
    if args.once:
        try:
            service.round()
        except Exception as error:  # the engine unreachable, refusing, or failing
            hosts = ", ".join(config.sinks.elasticsearch.hosts)
            raise Problems(
                [f"cannot correlate with the search engine at {hosts}: {describe_error(error)}"]
            ) from None
        # The incidents of this round's verdicts (not every one the index holds: a service
        # beside it may have written others, closed or merged since).
        kept = [service.book.tracked.get(id_) for id_ in service.decided]
        stored = [tracked.incident for tracked in kept if tracked is not None]
        return _print([incident_from_document(found) for found in stored], args, stored)
    return _serve(service, metrics, config, security)


def settings_of(config: Config) -> CorrelateSettings:
    correlate = config.correlate
    return CorrelateSettings(
        namespace=config.sinks.elasticsearch.namespace,
        poll_interval_s=correlate.poll_interval,
        overlap_s=correlate.overlap,
        lookback_s=correlate.lookback,
        quiet_period_s=correlate.quiet_period,
    )


def engine_of(config: Config) -> SearchEngine:
    """A client of the search engine of [sinks.elasticsearch], its secrets read."""
    try:
        return connect(connection_from(config.sinks.elasticsearch, os.environ))
    except SecretUnreadable as error:
        raise Problems([f"{SECTION} {error}"]) from None


def _checked(args: argparse.Namespace) -> int:
    """What the service would use, or every problem it would refuse to start with: a finding
    of the check (exit 1, as `config check` has it); a configuration file that cannot be read
    at all is an input error (2)."""
    try:
        config = load_config(args.config or config_path_from(os.environ), os.environ)
        engine = engine_of(config)
        web = config.correlate.web_config_file
        if web is not None:
            load_web_config(web)
    except ConfigUnreadable:
        raise
    except Problems as problems:
        for line in problems.lines():
            sys.stderr.write(f"npuwatch: {line}\n")
        return EXIT_FINDINGS
    settings = settings_of(config)
    engine.close()
    hosts = ", ".join(config.sinks.elasticsearch.hosts)
    # The correlator reads the engine whether or not this host's agent ships to it; a file
    # where it does not is often the default one, with the default host: say so.
    shipping = (
        ""
        if config.sinks.elasticsearch.enabled
        else (
            " (enabled = false in [sinks.elasticsearch]: this host's agent ships nothing there; "
            "the correlator reads it all the same)"
        )
    )
    sys.stdout.write(
        f"search engine: {config.sinks.elasticsearch.flavour} at {hosts}{shipping}\n"
        f"reads: logs-ascend.topology-{settings.namespace}, "
        f"logs-ascend.events-{settings.namespace}\n"
        f"writes: logs-ascend.incidents-{settings.namespace}\n"
        f"metrics: /metrics on {config.correlate.listen}\n"
    )
    return EXIT_OK


def _serve(
    service: CorrelatorService,
    metrics: CorrelatorMetrics,
    config: Config,
    security: WebSecurity | None,
) -> int:
    correlate = config.correlate
    server = MetricsServer(metrics.registry, correlate.listen, security)
    stop = threading.Event()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(128 + signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    notifier = SystemdNotifier.from_environ(os.environ)
    try:
        server.start()
    except OSError as error:
        raise Problems([f"{error}: /metrics is not served (set [correlate] listen)"]) from None
    log.info("correlating %s every %.0f s", service.incidents_index, correlate.poll_interval)
    watchdog = threading.Thread(
        target=_watchdog, args=(notifier, stop), name="npuwatch-watchdog", daemon=True
    )
    # The rounds in a thread of their own, so that a stop does not wait on a hung request.
    failed: list[BaseException] = []

    def run_rounds() -> None:
        try:
            service.run(stop, ready=lambda: notifier.ready("correlating"))
        except BaseException as error:  # raised again in the main thread, which ends with it
            failed.append(error)

    rounds = threading.Thread(target=run_rounds, name="npuwatch-rounds", daemon=True)
    try:
        if notifier.watchdog_interval is not None:
            watchdog.start()
        rounds.start()
        while rounds.is_alive() and not stop.wait(1.0):
            pass  # (a wait with a timeout: the signal handler runs between the waits)
        notifier.stopping("stopping")
        rounds.join(ROUND_GRACE_S)
        if failed:
            raise failed[0]
        if rounds.is_alive():
            log.warning(
                "stopping without the round under way, still waiting on the search engine "
                "after %.0f s; nothing is lost, the next start reads it all again",
                ROUND_GRACE_S,
            )
    finally:
        stop.set()
        server.stop()
        notifier.close()
    return EXIT_OK


def _watchdog(notifier: SystemdNotifier, stop: threading.Event) -> None:
    interval = notifier.watchdog_interval or 30.0
    while not stop.wait(interval):
        notifier.watchdog()


# -- offline: the journals of several hosts -----------------------------------------------------


def _from_journals(folders: list[Path], jobs: int) -> list[Incident]:
    directories = [_journal_of(folder) for folder in folders]
    try:
        incidents, problems = journal_incidents(directories, jobs)
    except JournalUnreadable as problem:
        fail(str(problem))
    for said in problems:
        log.warning("%s", said)
    return incidents


def _journal_of(folder: Path) -> Path:
    if not folder.is_dir():
        fail(f"{folder}: no such folder: give an agent's state directory or its journal folder")
    if segment_files(folder):
        return folder
    if not segment_files(folder / "journal"):
        fail(f"{folder}: no journal here (no segment-*.db in it or in {folder / 'journal'})")
    return folder / "journal"


# -- printing -----------------------------------------------------------------------------------


def _print(
    incidents: list[Incident],
    args: argparse.Namespace,
    stored: list[dict[str, Any]] | None = None,
) -> int:
    if args.json:
        found = stored if stored is not None else [i.to_dict() for i in incidents]
        json.dump({"incidents": found}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        try:
            zone = resolve_timezone(args.timezone)
        except ValueError as error:
            fail(str(error))
        palette = Palette(wants_colour(sys.stdout))
        lines = render_incidents(incidents, zone, palette) or ["No collective incident."]
        sys.stdout.write("\n".join(lines).rstrip("\n") + "\n")
    return EXIT_FINDINGS if incidents else EXIT_OK
