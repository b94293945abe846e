"""`npuwatch incident list|show`: the correlator's incidents, read from the search engine."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from npuwatch.cluster.incident_document import incident_from_document, iso_us
from npuwatch.cluster.service import INCIDENTS_STREAM
from npuwatch.commands.correlate_run import engine_of
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.config import config_path_from, load_config
from npuwatch.correlation.report_text import render_incidents
from npuwatch.parsers.timestamps import resolve_timezone
from npuwatch.quantities import parse_duration
from npuwatch.records import format_timestamp
from npuwatch.sinks.search.engine import SearchEngine, describe_error
from npuwatch.sinks.search.streams import state_index
from npuwatch.terminal import Palette, format_datetime, visible_line, wants_colour

_LISTED = 1000


def run_list(args: argparse.Namespace) -> int:
    since = args.since if args.since is not None or args.open else "24h"
    try:
        since_s = None if since is None else parse_duration(since)
    except ValueError as error:
        fail(f"--since: {error}")
    engine, index = _open(args)
    filters: list[dict[str, Any]] = []
    if since_s is not None:
        # `updated` is when the correlator last revised it (ISO, UTC: ordered as text too).
        since_us = int((time.time() - since_s) * 1_000_000)
        filters.append({"range": {"ascend.incident.updated": {"gte": format_timestamp(since_us)}}})
    if args.open:
        filters.append({"term": {"ascend.incident.closed": False}})
    body = {
        "size": _LISTED,
        "query": {"bool": {"filter": filters}},
        "sort": [{"ascend.incident.updated": {"order": "desc", "unmapped_type": "keyword"}}],
    }
    hits = _read(engine, lambda: engine.search(index, body))
    stored = [hit["_source"]["ascend"]["incident"] for hit in hits]
    if args.json:
        _json({"incidents": stored})
    else:
        zone = _zone(args)
        for found in stored:
            sys.stdout.write(_line(found, zone) + "\n")
        if not stored:
            which = "open incident" if args.open else "incident"
            when = f" detected or revised in the last {since}" if since is not None else ""
            sys.stdout.write(f"No {which}{when} in {index}.\n")
    return EXIT_OK if stored else EXIT_FINDINGS


def run_show(args: argparse.Namespace) -> int:
    engine, index = _open(args)
    hit = _read(engine, lambda: engine.get(index, args.id))
    if hit is None:
        sys.stderr.write(
            f"npuwatch: no incident {visible_line(args.id)} in {index} (npuwatch incident list)\n"
        )
        return EXIT_FINDINGS
    stored = hit["_source"]["ascend"]["incident"]
    if args.json:
        _json(stored)
        return EXIT_OK
    palette = Palette(wants_colour(sys.stdout))
    lines = render_incidents([incident_from_document(stored)], _zone(args), palette)
    sys.stdout.write(f"incident {visible_line(args.id)}\n" + "\n".join(lines).rstrip("\n") + "\n")
    return EXIT_OK


def _open(args: argparse.Namespace) -> tuple[SearchEngine, str]:
    config = load_config(args.config or config_path_from(os.environ), os.environ)
    namespace = config.sinks.elasticsearch.namespace
    return engine_of(config), state_index(INCIDENTS_STREAM, namespace)


def _read(engine: SearchEngine, request: Any) -> Any:
    try:
        return request()
    except Exception as error:
        hosts = ", ".join(engine.connection.hosts)
        fail(f"cannot read the incidents from {hosts}: {describe_error(error)}")


def _line(found: dict[str, Any], zone: Any) -> str:
    status = (
        "closed" if found.get("closed") else "provisional" if found.get("provisional") else "open"
    )
    roots = ", ".join(_place(p) for p in found.get("root_cause", ())) or "not named"
    revised = format_datetime(iso_us(found.get("updated")), zone)
    first = format_datetime(_first_us(found), zone)
    waiting = f"({found.get('victims_count', 0)} waiting)"
    # The stored document holds host names and log text: shown, never acted on (terminal.py).
    return visible_line(
        f"{found.get('id')}  {status:<11}  revised {revised}  fault {first}  "
        f"{found.get('kind')}  {roots}  {waiting}"
    )


def _place(place: dict[str, Any]) -> str:
    device = "" if place.get("device") is None else f" dev {place['device']}"
    rank = "" if place.get("rank") is None else f" (rank {place['rank']})"
    return f"{place.get('host') or '?'}{device}{rank}"


def _first_us(found: dict[str, Any]) -> int | None:
    return iso_us(found.get("first"))


def _zone(args: argparse.Namespace) -> Any:
    try:
        return resolve_timezone(args.timezone)
    except ValueError as error:
        fail(str(error))


def _json(found: Any) -> None:
    json.dump(found, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
