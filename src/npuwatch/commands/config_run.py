"""`npuwatch config`: check a configuration file, or print a complete example."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import socket
import sys
from pathlib import Path

from npuwatch.collector.npu_smi_command import find_executable, split_command
from npuwatch.collector.roots import discover_roots
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from npuwatch.config import (
    DEFAULT_CONFIG_PATH,
    Config,
    ConfigError,
    ConfigUnreadable,
    config_path_from,
    example_config,
    format_duration,
    load_config,
)

STDIN = Path("-")
"""`npuwatch config check -`: the configuration comes on standard input."""
_STDIN_FILE = Path("/dev/stdin")
_STDIN_LABEL = "<stdin>"


def run_config_check(args: argparse.Namespace) -> int:
    """Validate the configuration and load the rule packs as the agent would; print what the
    agent would use, or every problem."""
    if args.path == STDIN:
        return _check_stdin()
    path: Path = args.path or config_path_from(os.environ) or DEFAULT_CONFIG_PATH
    if path == DEFAULT_CONFIG_PATH and not args.path and not path.exists():
        # No file at all is a valid setup: the agent runs with the defaults (and NPUWATCH_*).
        return _check_defaults()
    if not path.exists():
        sys.stderr.write(
            f"npuwatch: {path}: no such file (write one with `npuwatch config example > {path}`; "
            "without a file the agent runs with the defaults)\n"
        )
        return EXIT_USAGE
    try:
        config = load_config(path, os.environ)
    except ConfigError as error:
        for problem in error.problems:
            sys.stderr.write(f"{problem}\n")
        return EXIT_USAGE if isinstance(error, ConfigUnreadable) else EXIT_FINDINGS
    return _report(f"{path}: ok", config)


def _check_stdin() -> int:
    # /dev/stdin rather than sys.stdin: the loader reads a path, and this one is read once,
    # as a pipe or a redirected file alike. Problems name <stdin>, not /dev/stdin.
    try:
        config = load_config(_STDIN_FILE, os.environ)
    except ConfigError as error:
        for problem in error.problems:
            if problem.source == str(_STDIN_FILE):
                problem = dataclasses.replace(problem, source=_STDIN_LABEL)
            sys.stderr.write(f"{problem}\n")
        return EXIT_USAGE if isinstance(error, ConfigUnreadable) else EXIT_FINDINGS
    return _report(f"{_STDIN_LABEL}: ok", config)


def _report(headline: str, config: Config) -> int:
    """Load the agent's rule packs for `config`; print `headline` and what the agent would use,
    or why the rules would stop it."""
    rules = _load_rules(config)
    files_load = _files_load(config)
    if rules is None or not files_load:
        return EXIT_USAGE
    sys.stdout.write(f"{headline}\n")
    _describe(config)
    sys.stdout.write(f"rules: {rules}\n")
    return EXIT_OK


def _load_rules(config: Config) -> str | None:
    """The rules the agent would load, summarised; None after printing their problems.

    The agent refuses to start on a broken or missing pack, so the check must too: the unit's
    ExecStartPre runs it, and only a failing check keeps systemd from restarting the agent in
    a loop. The messages are the agent's own, word for word.
    """
    # The agent's choice of packs (builtin, /etc/npuwatch/rules.d, rules.paths), not a copy of
    # it; imported here because the agent's modules take half a second to load.
    from npuwatch.agent.runtime import rule_locations  # noqa: PLC0415
    from npuwatch.rules.loader import RuleLoadError, load_rules  # noqa: PLC0415

    locations = rule_locations(config)
    try:
        ruleset = load_rules(locations)
    except RuleLoadError as error:
        for problem in error.problems:
            sys.stderr.write(f"npuwatch: {problem}\n")
        sys.stderr.write("npuwatch: the rules have errors: fix them and start again\n")
        return None
    packs = len(ruleset.files)
    where = ", ".join(str(location) for location in locations) or "none (rules.builtin = false)"
    count = len(ruleset.rules)
    return f"{count} rule{'s' * (count != 1)} in {packs} pack{'s' * (packs != 1)} from {where}"


def _files_load(config: Config) -> bool:
    """Whether the other files the agent reads before it starts can be read: the exporter's web
    configuration, the search engine's secrets and CA file. As with the rules, a file the agent
    would stop on fails the check, with the agent's own lines."""
    exporter = config.sinks.prometheus
    if exporter.enabled and exporter.web_config_file is not None:
        from npuwatch.sinks.prometheus.web_config import load_web_config  # noqa: PLC0415

        try:
            load_web_config(exporter.web_config_file)
        except ConfigError as error:
            for problem in error.problems:
                sys.stderr.write(f"npuwatch: {problem}\n")
            return False
    search = config.sinks.elasticsearch
    if search.enabled:
        from npuwatch.sinks.elasticsearch.settings import (  # noqa: PLC0415
            SecretUnreadable,
            connection_from,
        )

        try:
            connection_from(search, os.environ)
        except SecretUnreadable as error:
            sys.stderr.write(f"npuwatch: [sinks.elasticsearch] {error}\n")
            return False
    return True


def _describe(config: Config) -> None:
    out = sys.stdout
    out.write(f"host: {config.agent.host_name or socket.gethostname()}\n")
    out.write(f"journal: {config.journal_path()}\n")
    roots = discover_roots(config.sources, os.environ)
    for root in roots:
        out.write(f"log root: {root}\n")
    if not roots:
        out.write(
            "log roots: none yet ($ASCEND_PROCESS_LOG_PATH, ~/ascend/log of sources.users and "
            "/var/log/npu/slog do not exist); set sources.roots to choose\n"
        )
    out.write(f"device telemetry: {_device_telemetry(config)}\n")
    for folder in config.profiling.paths:
        state = "" if folder.is_dir() else " (does not exist yet: runs are found once it does)"
        out.write(f"profiling runs: {folder}{state}\n")
    out.write(f"search engine: {_search_sink(config)}\n")
    out.write(f"prometheus: {_metrics_endpoint(config)}\n")


def _metrics_endpoint(config: Config) -> str:
    prometheus = config.sinks.prometheus
    if not prometheus.enabled:
        return "off (sinks.prometheus.enabled = false)"
    web = prometheus.web_config_file
    return f"/metrics on {prometheus.listen}" + (f" (TLS/auth from {web})" if web else "")


def _search_sink(config: Config) -> str:
    search = config.sinks.elasticsearch
    if not search.enabled:
        return "off (sinks.elasticsearch.enabled = false)"
    levels = "every record" if search.min_level == "DEBUG" else f"{search.min_level} and above"
    return (
        f"{search.flavour} at {', '.join(search.hosts)}, namespace {search.namespace}, "
        f"ships {levels}"
    )


def _device_telemetry(config: Config) -> str:
    devices = config.devices
    if not devices.enabled:
        return "off (devices.enabled = false)"
    command = split_command(devices.npu_smi_command)
    program = find_executable(command)
    if program is None:
        return f"off: {command[0]} not found (no driver here? set devices.npu_smi_command)"
    return f"{shlex.join([program, *command[1:]])} every {format_duration(devices.interval)}"


def run_config_example(args: argparse.Namespace) -> int:
    """Print the example configuration file."""
    sys.stdout.write(example_config())
    return EXIT_OK


def _check_defaults() -> int:
    try:
        config = load_config(None, os.environ)
    except ConfigError as error:
        for problem in error.problems:
            sys.stderr.write(f"{problem}\n")
        return EXIT_FINDINGS
    return _report(
        f"{DEFAULT_CONFIG_PATH}: no such file; the agent runs with the defaults "
        "(`npuwatch config example` prints them)",
        config,
    )
