"""`npuwatch es setup|check`: prepare and inspect the search engine for the sink."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK
from npuwatch.config import Config, SearchSinkSection, config_path_from, load_config
from npuwatch.problems import Problems
from npuwatch.sinks.search.engine import SearchEngine, status_of
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.settings import (
    SECTION,
    SecretUnreadable,
    connection_from,
    dead_letter_path,
)
from npuwatch.sinks.search.streams import all_streams, policy_name, template_name
from npuwatch.sinks.search.templates import index_template, lifecycle_policy


def run_setup(args: argparse.Namespace) -> int:
    _, section, engine = _load(args)
    problems = 0
    try:
        name = template_name(section.namespace)
        try:
            engine.put_index_template(
                name, index_template(section.namespace, section.flavour, replicas=args.replicas)
            )
            print(f"index template {name}: installed (logs-ascend.*-{section.namespace})")
        except Exception as error:
            _problem(f"cannot install the index template {name}: {_describe(error)}")
            return EXIT_FINDINGS
        days = int(section.delete_after // 86400)
        policy = lifecycle_policy(section.flavour, days, section.namespace)
        policy_id = policy_name(section.namespace)
        try:
            engine.put_lifecycle_policy(policy_id, policy)
            print(f"lifecycle policy {policy_id}: installed (delete after {days} days)")
        except Exception as error:
            problems += 1
            _problem(_lifecycle_problem(section, engine, error))
    finally:
        engine.close()
    return EXIT_FINDINGS if problems else EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    config, section, engine = _load(args)
    problems = 0
    try:
        try:
            info = engine.info()
        except Exception as error:
            _problem(f"cannot reach {', '.join(section.hosts)}: {_describe(error)}")
            return EXIT_FINDINGS
        version = info.get("version", {})
        print(
            f"connected: {section.flavour} {version.get('number', '?')} "
            f"(cluster {info.get('cluster_name', '?')})"
        )
        name = template_name(section.namespace)
        try:
            template = engine.index_template(name)
        except Exception as error:
            problems += 1
            _problem(
                f"cannot read the index template {name}: {_describe(error)}{_privilege(error)}"
            )
        else:
            if template is None:
                problems += 1
                _problem(f"index template {name} is missing: run `npuwatch es setup`")
            else:
                print(f"index template {name}: present")
        try:
            policy = engine.lifecycle_policy(policy_name(section.namespace))
        except Exception as error:
            policy = None
            problems += 1
            _problem(_lifecycle_problem(section, engine, error))
        else:
            if policy is None:
                problems += 1
                _problem(
                    f"lifecycle policy {policy_name(section.namespace)} is missing: "
                    "run `npuwatch es setup`"
                )
            else:
                print(f"lifecycle policy {policy_name(section.namespace)}: present")
        for stream in all_streams(section.namespace):
            try:
                print(f"data stream {stream}: {engine.count(stream)} documents")
            except Exception as error:
                problems += 1
                _problem(f"cannot count {stream}: {_describe(error)}{_privilege(error)}")
        dead = dead_letter_path(section, config.agent.state_directory)
        letters = _line_count(dead)
        if letters:
            problems += 1
            _problem(f"{letters} refused documents in {dead}: see their reasons there")
    finally:
        engine.close()
    return EXIT_FINDINGS if problems else EXIT_OK


def _load(args: argparse.Namespace) -> tuple[Config, SearchSinkSection, SearchEngine]:
    """The configuration, its search-engine section with the command line's overrides, and a
    client; Problems naming every key that is wrong."""
    config = load_config(args.config or config_path_from(os.environ), os.environ)
    updates: dict[str, Any] = {}
    if args.flavour:
        updates["flavour"] = args.flavour
    if args.host:
        updates["hosts"] = args.host
    if args.namespace:
        updates["namespace"] = args.namespace
    try:
        section = SearchSinkSection.model_validate(
            {**config.sinks.elasticsearch.model_dump(), **updates}
        )
        engine = connect(connection_from(section, os.environ))
    except ValidationError as error:
        raise Problems(
            # A validator's own reason, without pydantic's "Value error, " in front of it.
            f"{SECTION} {'.'.join(map(str, detail['loc']))}: "
            f"{detail.get('ctx', {}).get('error', detail['msg'])}"
            for detail in error.errors()
        ) from None
    except (SecretUnreadable, ValueError) as error:
        raise Problems([f"{SECTION} {error}"]) from None
    return config, section, engine


def _lifecycle_problem(
    section: SearchSinkSection, engine: SearchEngine, error: BaseException
) -> str:
    unsupported = engine.lifecycle_unsupported(error, int(section.delete_after // 86400))
    if unsupported is not None:
        head, _, rest = unsupported.partition(";")
        return f"lifecycle policy: {head} ({_describe(error)});{rest}"
    name = policy_name(section.namespace)
    return f"cannot install or read the lifecycle policy {name}: {_describe(error)}"


def _privilege(error: BaseException) -> str:
    if status_of(error) in (401, 403):
        return (
            " (the agent's API key or user may not do this: run `npuwatch es setup|check` with "
            "an administrator's, e.g. NPUWATCH_ES_API_KEY=...; deploy/config/ lists the "
            "privileges)"
        )
    return ""


def _describe(error: BaseException) -> str:
    status = status_of(error)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"HTTP {status}: {text}" if status is not None else text


def _problem(text: str) -> None:
    print(f"npuwatch: {text}", file=sys.stderr)


def _line_count(path: Path) -> int:
    try:
        with path.open(encoding="utf-8") as lines:
            return sum(1 for line in lines if line.strip())
    except FileNotFoundError:
        return 0
