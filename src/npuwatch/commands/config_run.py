"""`npuwatch config`: check a configuration file, or print a complete example."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from npuwatch.collector.roots import missing_roots
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK
from npuwatch.config import (
    DEFAULT_CONFIG_PATH,
    Config,
    config_path_from,
    example_config,
    load_config,
)
from npuwatch.config.loading import ConfigError, ConfigUnreadable
from npuwatch.problems import EXIT_USAGE, Problems

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
    """Build the agent's topology from `config` as `npuwatch agent` does (rules loaded, secrets
    and the web configuration read, nothing written); print `headline` and what the agent
    would use. Every reason the agent would refuse to start is said in the agent's own words,
    with exit 1."""
    # Imported here: the agent's modules take half a second to load, which `config example`
    # and a wrong file need not pay.
    from npuwatch.agent.topology import build, describe  # noqa: PLC0415

    with _warnings_said():
        try:
            topology = build(config, os.environ)
        except Problems as problems:
            # What the agent would refuse to start with is what the check is for: a finding
            # (1), like a key of the wrong type; 2 is for a file that cannot be checked at all.
            for line in problems.lines():
                sys.stderr.write(f"npuwatch: {line}\n")
            return EXIT_FINDINGS
    missing = missing_roots(config.sources.roots)
    if missing:
        headline = f"{headline.removesuffix(': ok')}: not ok (see below)"
    sys.stdout.write(f"{headline}\n")
    for line in describe(topology):
        sys.stdout.write(f"{line}\n")
    for root in missing:
        # Named in the file, so meant: a typo here leaves the agent following nothing.
        sys.stderr.write(
            f"npuwatch: sources.roots: {root} does not exist: fix the path, or create the "
            "folder (the agent follows a root once it appears)\n"
        )
    return EXIT_FINDINGS if missing else EXIT_OK


@contextlib.contextmanager
def _warnings_said() -> Iterator[None]:
    """Say what building the agent warns about (`verify_certificates = false`) on stderr, in
    the agent's own words and format: a setting the agent would start with but should not."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("npuwatch: %(levelname)s %(message)s"))
    logger = logging.getLogger("npuwatch")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


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
