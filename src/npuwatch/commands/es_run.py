"""`npuwatch es setup|check`: prepare and inspect the search engine for the sink."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK
from npuwatch.config import Config, config_path_from, load_config
from npuwatch.config.sinks import SearchSinkSection
from npuwatch.problems import Problems
from npuwatch.sinks.search.engine import SearchEngine, describe_error, status_of
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.settings import (
    SECTION,
    SecretUnreadable,
    connection_from,
    dead_letter_path,
)
from npuwatch.sinks.search.streams import (
    INGESTED_PIPELINE,
    STATE_INDICES,
    all_streams,
    events_template_name,
    policy_name,
    state_index,
    state_template_name,
    template_name,
)
from npuwatch.sinks.search.templates import (
    events_template,
    index_template,
    ingested_pipeline,
    lifecycle_policy,
    state_template,
)


@dataclass(frozen=True)
class _Part:
    """Something `es setup` installs in the engine, and how `es check` reads it back."""

    what: str
    name: str
    covers: str
    install: Callable[[SearchEngine], None]
    read: Callable[[SearchEngine], object | None]


def _parts(section: SearchSinkSection, replicas: int) -> list[_Part]:
    namespace, flavour = section.namespace, section.flavour
    plain = ", ".join(state_index(name, namespace) for name in STATE_INDICES)

    def template(name: str, body: dict[str, Any]) -> _Part:
        covers = ", ".join(body["index_patterns"])
        return _Part(
            "index template",
            name,
            covers,
            lambda engine: engine.put_index_template(name, body),
            lambda engine: engine.index_template(name),
        )

    return [
        _Part(
            "ingest pipeline",
            INGESTED_PIPELINE,
            "stamps event.ingested on events, topology and incidents",
            lambda engine: engine.put_pipeline(INGESTED_PIPELINE, ingested_pipeline()),
            lambda engine: engine.pipeline(INGESTED_PIPELINE),
        ),
        template(template_name(namespace), index_template(namespace, flavour, replicas=replicas)),
        template(
            events_template_name(namespace),
            events_template(namespace, flavour, replicas=replicas),
        ),
        _Part(
            "index template",
            state_template_name(namespace),
            plain,
            lambda engine: engine.put_index_template(
                state_template_name(namespace), state_template(namespace, replicas=replicas)
            ),
            lambda engine: engine.index_template(state_template_name(namespace)),
        ),
    ]


def run_setup(args: argparse.Namespace) -> int:
    _, section, engine = _load(args)
    problems = 0
    try:
        for part in _parts(section, args.replicas):
            try:
                part.install(engine)
            except Exception as error:
                _problem(f"cannot install the {part.what} {part.name}: {describe_error(error)}")
                return EXIT_FINDINGS
            print(f"{part.what} {part.name}: installed ({part.covers})")
        days = int(section.delete_after // 86400)
        policy = lifecycle_policy(section.flavour, days, section.namespace)
        policy_id = policy_name(section.namespace)
        try:
            engine.put_lifecycle_policy(policy_id, policy)
            print(f"lifecycle policy {policy_id}: installed (delete after {days} days)")
        except Exception as error:
            problems += _lifecycle_problem(section, engine, error)
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
            _problem(f"cannot reach {', '.join(section.hosts)}: {describe_error(error)}")
            return EXIT_FINDINGS
        version = info.get("version", {})
        print(
            f"connected: {section.flavour} {version.get('number', '?')} "
            f"(cluster {info.get('cluster_name', '?')})"
        )
        for part in _parts(section, replicas=1):
            try:
                found = part.read(engine)
            except Exception as error:
                problems += 1
                _problem(
                    f"cannot read the {part.what} {part.name}: {describe_error(error)}"
                    f"{_privilege(error)}"
                )
                continue
            if found is None:
                problems += 1
                _problem(f"{part.what} {part.name} is missing: run `npuwatch es setup`")
            else:
                print(f"{part.what} {part.name}: present")
        try:
            policy = engine.lifecycle_policy(policy_name(section.namespace))
        except Exception as error:
            policy = None
            problems += _lifecycle_problem(section, engine, error)
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
                _problem(f"cannot count {stream}: {describe_error(error)}{_privilege(error)}")
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
) -> int:
    """Say why the lifecycle policy could not be installed or read; 1 if that is a problem,
    0 if it is only a warning: an engine without the lifecycle plugin (an OpenSearch without
    ISM) keeps the documents and deletes nothing, which the operator must know but which a
    script must not take for a failed setup."""
    unsupported = engine.lifecycle_unsupported(error, int(section.delete_after // 86400))
    if unsupported is not None:
        head, _, rest = unsupported.partition(";")
        _problem(f"warning: lifecycle policy: {head};{rest}")
        return 0
    name = policy_name(section.namespace)
    _problem(f"cannot install or read the lifecycle policy {name}: {describe_error(error)}")
    return 1


def _privilege(error: BaseException) -> str:
    if status_of(error) in (401, 403):
        return (
            " (the agent's API key or user may not do this: run `npuwatch es setup|check` with "
            "an administrator's, e.g. NPUWATCH_ES_API_KEY=...; deploy/config/ lists the "
            "privileges)"
        )
    return ""


def _problem(text: str) -> None:
    print(f"npuwatch: {text}", file=sys.stderr)


def _line_count(path: Path) -> int:
    try:
        with path.open(encoding="utf-8") as lines:
            return sum(1 for line in lines if line.strip())
    except FileNotFoundError:
        return 0
