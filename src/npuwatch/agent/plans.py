"""Each component of the agent as its configuration makes it: a plan, checked and read once.

A plan is plain data the runtime builds from without checking anything again: the sources'
roots and reading limits, the rules already loaded, the journal's place and retention, the
device poller's command, the profiling folders, the metrics endpoint with its TLS and users
already read. Making a plan reads the files the component needs (rule packs, the web
configuration) and raises Problems naming file, key and reason when one is wrong; it writes
nothing, so that `npuwatch config check` can make every plan the agent would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from npuwatch.agent.collective_stage import CollectiveSettings
from npuwatch.agent.journal_stage import JournalTiming
from npuwatch.collector.discovery import FileFilter
from npuwatch.collector.npu_smi_poller import PollSettings
from npuwatch.collector.roots import discover_roots
from npuwatch.collector.tailer import TailSettings
from npuwatch.config import Config
from npuwatch.config.sections import (
    CollectiveSection,
    DevicesSection,
    JournalSection,
    ProfilingSection,
    RulesSection,
    SourcesSection,
)
from npuwatch.config.sinks import PrometheusSinkSection
from npuwatch.default_paths import SYSTEM_RULES
from npuwatch.journal.store import JournalSettings
from npuwatch.parsers.stream import ParseLimits
from npuwatch.rules.loader import DEFAULT_PACKS, RuleSet, load_rules
from npuwatch.setting_values import command_words
from npuwatch.sinks.prometheus.web_config import WebSecurity, load_web_config
from npuwatch.tree_walk import LinkPolicy

RULES_ADVICE = "the rules have errors: fix them and start again"


@dataclass(frozen=True)
class SourcesPlan:
    roots: tuple[Path, ...]
    wanted: FileFilter
    links: LinkPolicy
    tail: TailSettings
    watch: bool
    rescan_interval_s: float
    queue_bytes: int


def plan_sources(config: Config, environ: Mapping[str, str], host: str) -> SourcesPlan:
    sources = config.sources
    return SourcesPlan(
        roots=tuple(discover_roots(sources, environ)),
        wanted=FileFilter(sources.include, sources.exclude),
        links=LinkPolicy(follow=sources.follow_links),
        tail=TailSettings(
            read_chunk_bytes=sources.read_chunk_bytes,
            max_open_files=sources.max_open_files,
            idle_flush_s=sources.idle_flush,
            idle_close_s=sources.idle_close,
            deleted_grace_s=sources.deleted_grace,
            fingerprint_bytes=sources.fingerprint_bytes,
            limits=ParseLimits(
                max_line_bytes=sources.max_line_bytes,
                max_record_lines=sources.max_record_lines,
                max_record_bytes=sources.max_record_bytes,
            ),
            host=host,
        ),
        watch=sources.watch,
        rescan_interval_s=sources.rescan_interval,
        queue_bytes=sources.queue_bytes,
    )


@dataclass(frozen=True)
class RulesPlan:
    locations: tuple[Path, ...]
    ruleset: RuleSet
    reload_interval_s: float


def rule_locations(rules: RulesSection) -> list[Path]:
    """Where the agent's rule packs are: npuwatch's own (unless turned off), the system's
    /etc/npuwatch/rules.d when it exists, and the configured ones."""
    locations = [DEFAULT_PACKS] if rules.builtin else []
    if SYSTEM_RULES.is_dir():
        locations.append(SYSTEM_RULES)
    locations.extend(rules.paths)
    return locations


def plan_rules(rules: RulesSection) -> RulesPlan:
    """The packs loaded; RuleLoadError (Problems) names the file, line and column of each
    problem. The agent refuses to start on a broken or missing pack."""
    locations = rule_locations(rules)
    return RulesPlan(tuple(locations), load_rules(locations), rules.reload_interval)


@dataclass(frozen=True)
class JournalPlan:
    directory: Path
    settings: JournalSettings
    timing: JournalTiming


def plan_journal(journal: JournalSection, directory: Path) -> JournalPlan:
    return JournalPlan(
        directory,
        JournalSettings(
            max_age_s=journal.max_age,
            max_bytes=journal.max_bytes,
            segment_bytes=journal.segment_bytes,
            sync=journal.sync,
        ),
        JournalTiming(commit_interval_s=journal.commit_interval),
    )


@dataclass(frozen=True)
class DevicesPlan:
    poll: PollSettings
    journal: bool
    command_text: str


def plan_devices(devices: DevicesSection) -> DevicesPlan | None:
    if not devices.enabled:
        return None
    poll = PollSettings(
        tuple(command_words(devices.npu_smi_command)),
        interval_s=devices.interval,
        timeout_s=devices.timeout,
    )
    return DevicesPlan(poll, devices.journal, devices.npu_smi_command)


@dataclass(frozen=True)
class ProfilingPlan:
    folders: tuple[Path, ...]
    scan_interval_s: float
    settle_s: float
    top_operator_types: int
    journal: bool


def plan_profiling(profiling: ProfilingSection) -> ProfilingPlan:
    """The importer's plan; with no folders it does not run, but the gauges keep the runs
    imported before (their saved figures)."""
    return ProfilingPlan(
        tuple(profiling.paths),
        profiling.scan_interval,
        profiling.settle,
        profiling.top_operator_types,
        profiling.journal,
    )


@dataclass(frozen=True)
class ExporterPlan:
    listen: str
    security: WebSecurity | None
    web_config_file: Path | None


def plan_exporter(exporter: PrometheusSinkSection) -> ExporterPlan | None:
    """The metrics endpoint, its TLS certificates and users read and checked (a ConfigError
    names the file and key of every problem)."""
    if not exporter.enabled:
        return None
    web = exporter.web_config_file
    security = load_web_config(web) if web is not None else None
    return ExporterPlan(exporter.listen, security, web)


@dataclass(frozen=True)
class CollectivePlan:
    settings: CollectiveSettings


def plan_collective(
    collective: CollectiveSection, sources: SourcesSection
) -> CollectivePlan | None:
    if not collective.enabled:
        return None
    return CollectivePlan(
        CollectiveSettings(
            heartbeat_interval_s=collective.heartbeat_interval,
            # a file's last record is held back idle_flush before it is read: the blocks of a
            # quiet process close only after that record has surely arrived
            quiet_close_s=2 * sources.idle_flush + 1.0,
        )
    )
