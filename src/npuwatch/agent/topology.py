"""One place builds the agent: from the configuration to the plan of every component.

`build` makes the plan of each component (plans.py) and of each sink (SINKS), gathering every
problem before it reports any, so that an operator fixes them in one go. It reads what the
components need (rule packs, secrets, the web configuration) and writes nothing: `npuwatch
config check` calls it exactly as `npuwatch agent` does, so a configuration that passes the
check starts. The runtime (runtime.py) is made from the topology and checks nothing again.

A reload builds a new topology the same way; `changes` says, per section of the
configuration, what the running agent takes up now and what waits for a restart.
"""

from __future__ import annotations

import shlex
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from npuwatch.agent.debug_stage import DebugToolsPlan, plan_debug_tools
from npuwatch.agent.plans import (
    RULES_ADVICE,
    CollectivePlan,
    DevicesPlan,
    ExporterPlan,
    JournalPlan,
    ProfilingPlan,
    RulesPlan,
    SourcesPlan,
    plan_collective,
    plan_devices,
    plan_exporter,
    plan_journal,
    plan_profiling,
    plan_rules,
    plan_sources,
)
from npuwatch.collector.npu_smi_command import find_executable
from npuwatch.config import Config
from npuwatch.private_files import UnsafeFolder, folder_problem
from npuwatch.problems import Problems
from npuwatch.quantities import format_duration
from npuwatch.rules.pack import RuleLoadError
from npuwatch.sinks.console_sink import plan_console_sink
from npuwatch.sinks.search.settings import plan_search_sink
from npuwatch.sinks.sink import SinkContext, SinkPlan

SinkPlanner = Callable[[Config, SinkContext], SinkPlan | None]

SINKS: tuple[SinkPlanner, ...] = (
    plan_console_sink,
    plan_search_sink,
)
"""Every sink the agent can run, in the order they start: adding one is its module (a Sink,
and a planner that reads its section) and a line here."""


@dataclass(frozen=True)
class Topology:
    """Every component of the agent as the configuration makes it."""

    config: Config
    host: str
    state_directory: Path
    timezone: str
    drain_timeout_s: float
    sources: SourcesPlan
    rules: RulesPlan
    journal: JournalPlan
    devices: DevicesPlan | None
    profiling: ProfilingPlan
    debug_tools: DebugToolsPlan
    collective: CollectivePlan | None
    exporter: ExporterPlan | None
    sinks: tuple[SinkPlan, ...]


def build(config: Config, environ: Mapping[str, str], console: TextIO | None = None) -> Topology:
    """The agent's topology; Problems lists everything that keeps it from starting."""
    problems: list[object] = []
    host = config.agent.host_name or socket.gethostname()
    state = config.agent.state_directory
    unsafe = folder_problem(state)
    if unsafe is not None:  # said by `config check` (the unit's ExecStartPre) and at start
        problems.append(UnsafeFolder(state, unsafe))
    try:
        rules = plan_rules(config.rules)
    except RuleLoadError as error:
        problems.extend([*error.problems, RULES_ADVICE])
    try:
        exporter = plan_exporter(config.sinks.prometheus)
    except Problems as error:
        problems.extend(error.problems)
    sinks: list[SinkPlan] = []
    context = SinkContext(environ, host, state, console)
    for planner in SINKS:
        try:
            plan = planner(config, context)
        except Problems as error:
            problems.extend(error.problems)
            continue
        if plan is not None:
            sinks.append(plan)
    if problems:
        raise Problems(problems)
    return Topology(
        config=config,
        host=host,
        state_directory=state,
        timezone=config.agent.timezone,
        drain_timeout_s=config.agent.drain_timeout,
        sources=plan_sources(config, environ, host),
        rules=rules,
        journal=plan_journal(config.journal, config.journal_path()),
        devices=plan_devices(config.devices),
        profiling=plan_profiling(config.profiling),
        debug_tools=plan_debug_tools(config.debug_tools),
        collective=plan_collective(config.collective, config.sources),
        exporter=exporter,
        sinks=tuple(sinks),
    )


# -- what the topology says of itself (`npuwatch config check`) --------------------------------


def describe(topology: Topology, search_path: str | None = None) -> list[str]:
    """What the agent would follow, run and serve, a line each."""
    lines = [f"host: {topology.host}", f"journal: {topology.journal.directory}"]
    lines.extend(f"log root: {root}" for root in topology.sources.roots)
    if not topology.sources.roots:
        lines.append(
            "log roots: none yet ($ASCEND_PROCESS_LOG_PATH, $ASCEND_WORK_PATH/log, ~/ascend/log "
            "of sources.users and /var/log/npu/slog do not exist); set sources.roots to choose"
        )
    lines.append(f"device telemetry: {_device_telemetry(topology.devices, search_path)}")
    for folder in topology.profiling.folders:
        state = "" if folder.is_dir() else " (does not exist yet: runs are found once it does)"
        lines.append(f"profiling runs: {folder}{state}")
    for folder in topology.debug_tools.folders:
        state = "" if folder.is_dir() else " (does not exist yet: outputs are found once it does)"
        lines.append(f"debugging-tool outputs: {folder}{state}")
    by_name = {sink.name: sink for sink in topology.sinks}
    if "console" in by_name:
        lines.append(f"console: {by_name['console'].description}")
    search = by_name.get("elasticsearch")
    off = "off (sinks.elasticsearch.enabled = false)"
    lines.append(f"search engine: {search.description if search is not None else off}")
    lines.append(f"prometheus: {_metrics_endpoint(topology.exporter)}")
    lines.append(f"rules: {_rules(topology.rules)}")
    return lines


def _device_telemetry(devices: DevicesPlan | None, search_path: str | None) -> str:
    if devices is None:
        return "off (devices.enabled = false)"
    command = devices.poll.command
    program = find_executable(command, search_path)
    if program is None:
        return f"off: {command[0]} not found (no driver here? set devices.npu_smi_command)"
    return f"{shlex.join([program, *command[1:]])} every {format_duration(devices.poll.interval_s)}"


def _metrics_endpoint(exporter: ExporterPlan | None) -> str:
    if exporter is None:
        return "off (sinks.prometheus.enabled = false)"
    web = exporter.web_config_file
    return f"/metrics on {exporter.listen}" + (f" (TLS/auth from {web})" if web else "")


def _rules(rules: RulesPlan) -> str:
    packs = len(rules.ruleset.files)
    where = ", ".join(map(str, rules.locations)) or "none (rules.builtin = false)"
    count = len(rules.ruleset.rules)
    return f"{count} rule{'s' * (count != 1)} in {packs} pack{'s' * (packs != 1)} from {where}"


# -- a reload ----------------------------------------------------------------------------------

LIVE_KEYS: dict[str, frozenset[str]] = {
    "sources": frozenset({"roots", "users", "include", "exclude"}),
    "rules": frozenset({"builtin", "paths"}),
}
"""What a running agent takes up at a reload: which files it follows, and its rule packs
(whose files are read again at every reload, changed or not)."""


@dataclass(frozen=True)
class SectionChange:
    section: str
    keys: tuple[str, ...]
    applied: bool
    """True when the running agent takes the change up; False when it waits for a restart."""


def changes(old: Config, new: Config) -> list[SectionChange]:
    """What changed between two configurations, per section: what a running agent applies
    now, and what waits for a restart."""
    found: list[SectionChange] = []
    for section in type(new).model_fields:
        before = getattr(old, section).model_dump()
        keys = _changed_keys(before, getattr(new, section).model_dump())
        live = LIVE_KEYS.get(section, frozenset())
        applied = tuple(key for key in keys if key in live)
        waiting = tuple(key for key in keys if key not in live)
        if applied:
            found.append(SectionChange(section, applied, applied=True))
        if waiting:
            found.append(SectionChange(section, waiting, applied=False))
    return found


def _changed_keys(
    before: dict[str, object], after: dict[str, object], prefix: str = ""
) -> list[str]:
    keys: list[str] = []
    for key, new in after.items():
        old = before.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            keys.extend(_changed_keys(old, new, f"{prefix}{key}."))
        else:
            keys.append(f"{prefix}{key}")
    return keys
