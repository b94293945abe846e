"""A host's part of a scan as a file: what `npuwatch summarize` writes on each host, and what
`npuwatch scan --summaries` (and a scan's worker processes) read back.

A summary is one JSON object (docs/reference/host-summary.md):

    {"format": "npuwatch-host-summary", "version": 1, "written_by": "0.2.0",
     "root": "/var/log/npu", "host": "worker-3", "context_lines": 50, "rules_applied": true,
     "scan": {...}, "extracted": [...], "closing": [...], "events": [...], "rules": {...},
     "lines": [...], "evidence": [...]}

`scan` holds the host's counts, processes, error codes and first errors (with their lines);
`extracted` and `closing` the collective facts and failure events in the order they were read;
`events` the rule events, each with the record that triggered it and its context, and `rules`
what the report says of each rule they name (title, severity, advice); `lines` and `evidence`
are tables the rest refers to by place, so that a line shown by several events is kept once. A
summary of another format version is refused with a line saying which version wrote it: the
central stage runs the same npuwatch as the hosts. Plain data in and out; a summary that is not
what it claims to be is a SummaryError, never an exception of another kind.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npuwatch import __version__
from npuwatch.parsers.hccl.model import CollectiveEvent, Evidence, Extracted, Fact, ProcessKey
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.events import Event
from npuwatch.rules.model import Rule, RuleSpec
from npuwatch.scan.aggregate import CodeStats, FirstError, ProcessStats, ScanResult
from npuwatch.scan.host_part import HostPart

FORMAT = "npuwatch-host-summary"
VERSION = 1
"""Raised whenever what a summary holds changes meaning; a reader reads its own version only."""


class SummaryError(ValueError):
    """A summary that cannot be read: another format, another version, or damaged."""


@dataclass
class HostSummary:
    """A host's part, and what the host's command was asked."""

    root: str
    host: str | None
    part: HostPart
    context_lines: int
    written_by: str = __version__


class _Texts:
    """The summary's table of lines: every context line and evidence line once, referred to
    by its place. A process's events and its first error show windows of the same lines (three
    rules on one trigger show the same fifty), and every fact of a line shares its evidence."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._places: dict[str, int] = {}
        self.evidence: list[list[Any]] = []
        self._evidence_places: dict[Evidence, int] = {}

    def place(self, text: str) -> int:
        found = self._places.get(text)
        if found is None:
            found = self._places[text] = len(self.lines)
            self.lines.append(text)
        return found

    def places(self, texts: list[str]) -> list[int]:
        return [self.place(text) for text in texts]

    def evidence_place(self, evidence: Evidence) -> int:
        """The place of an evidence line in the evidence table (the facts of one line share
        it, as they share one Evidence)."""
        found = self._evidence_places.get(evidence)
        if found is None:
            found = self._evidence_places[evidence] = len(self.evidence)
            file, line, text, time_us, offset = evidence
            self.evidence.append([file, line, self.place(text), time_us, offset])
        return found


def summary_text(summary: HostSummary) -> str:
    part = summary.part
    rules = {event.rule.id: _rule_data(event.rule) for event in part.events}
    texts = _Texts()
    scan = _result_data(part.result, texts)
    extracted = [_extracted_data(item, texts) for item in part.extracted]
    closing = [_extracted_data(item, texts) for item in part.closing]
    events = [_event_data(event, texts) for event in part.events]
    return json.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "written_by": summary.written_by,
            "root": summary.root,
            "host": summary.host,
            "context_lines": summary.context_lines,
            "rules_applied": part.rules_applied,
            "listing_problems": part.listing_problems,
            "scan": scan,
            "extracted": extracted,
            "closing": closing,
            "events": events,
            "rules": rules,
            "lines": texts.lines,
            "evidence": texts.evidence,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def read_summary_text(text: str | bytes, name: str = "summary") -> HostSummary:
    """The summary in `text`; SummaryError saying what is wrong with `name` when it is not one
    this npuwatch reads."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise SummaryError(f"{name} is not a host summary (not JSON: {error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SummaryError(
            f"{name} is not a host summary: write one with 'npuwatch summarize' on each host"
        )
    version = data.get("version")
    if version != VERSION:
        raise SummaryError(
            f"{name} is a host summary of format version {version} (written by npuwatch "
            f"{data.get('written_by')}); this npuwatch ({__version__}) reads version {VERSION}: "
            "summarize again with this version, or merge with the version that wrote it"
        )
    try:
        rules = {str(id_): _rule(id_, value) for id_, value in data["rules"].items()}
        lines = [str(line) for line in data["lines"]]
        evidence = [_evidence(item, lines) for item in data["evidence"]]
        part = HostPart(
            host=data["host"],
            result=_result(data["scan"], str(data["root"]), lines),
            extracted=[_extracted(item, evidence) for item in data["extracted"]],
            closing=[_extracted(item, evidence) for item in data["closing"]],
            events=[_event(item, rules, lines) for item in data["events"]],
            rules_applied=bool(data["rules_applied"]),
            listing_problems=[str(problem) for problem in data["listing_problems"]],
        )
        return HostSummary(
            root=str(data["root"]),
            host=None if data["host"] is None else str(data["host"]),
            part=part,
            context_lines=int(data["context_lines"]),
            written_by=str(data.get("written_by")),
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise SummaryError(f"{name} is a damaged host summary ({error!r})") from None


# -- the counts ---------------------------------------------------------------------------------


def _result_data(result: ScanResult, texts: _Texts) -> dict[str, Any]:
    return {
        "files": result.files,
        "bytes": result.bytes,
        "lines": result.lines,
        "records": result.records,
        "first_us": result.first_us,
        "last_us": result.last_us,
        # Pairs, in the order the counters hold them: ties of the report keep that order.
        "levels": list(result.levels.items()),
        "modules": list(result.modules.items()),
        "kinds": list(result.kinds.items()),
        "flags": list(result.flags.items()),
        "codes": [_code_data(stats) for stats in result.codes.values()],
        "processes": [
            [list(key), dataclasses.asdict(stats)] for key, stats in result.processes.items()
        ],
        "devices": sorted(result.devices),
        "first_errors": [_first_error_data(error, texts) for error in result.first_errors],
        "problems": list(result.problems),
    }


def _result(data: Mapping[str, Any], root: str, lines: list[str]) -> ScanResult:
    result = ScanResult(
        root=root,
        files=int(data["files"]),
        bytes=int(data["bytes"]),
        lines=int(data["lines"]),
        records=int(data["records"]),
        first_us=_optional_int(data["first_us"]),
        last_us=_optional_int(data["last_us"]),
        levels=_counter(data["levels"]),
        modules=_counter(data["modules"]),
        kinds=_counter(data["kinds"]),
        flags=_counter(data["flags"]),
        devices={int(device) for device in data["devices"]},
        first_errors=[_first_error(error, lines) for error in data["first_errors"]],
        problems=[str(problem) for problem in data["problems"]],
    )
    for item in data["codes"]:
        stats = _code(item)
        result.codes[stats.code] = stats
    for (host, key), stats in data["processes"]:
        result.processes[(host, key)] = ProcessStats(**stats)
    return result


def _first_error_data(error: FirstError, texts: _Texts) -> dict[str, Any]:
    values = dataclasses.asdict(error)
    values["context"] = texts.places(error.context)
    return values


def _first_error(data: Mapping[str, Any], lines: list[str]) -> FirstError:
    values = dict(data)
    values["context"] = [lines[place] for place in data["context"]]
    return FirstError(**values)


def _code_data(stats: CodeStats) -> dict[str, Any]:
    return {
        "code": stats.code,
        "count": stats.count,
        "first_us": stats.first_us,
        "last_us": stats.last_us,
        "processes": [[host, pid, name] for (host, pid), name in stats.processes.items()],
        "devices": sorted(stats.devices),
    }


def _code(data: Mapping[str, Any]) -> CodeStats:
    return CodeStats(
        code=str(data["code"]),
        count=int(data["count"]),
        first_us=_optional_int(data["first_us"]),
        last_us=_optional_int(data["last_us"]),
        processes={(host, int(pid)): str(name) for host, pid, name in data["processes"]},
        devices={int(device) for device in data["devices"]},
    )


def _counter(pairs: list[list[Any]]) -> Counter[str]:
    counter: Counter[str] = Counter()
    for name, count in pairs:
        counter[str(name)] = int(count)
    return counter


def _optional_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


# -- the collective facts and failure events ---------------------------------------------------


def _evidence(data: list[Any], lines: list[str]) -> Evidence:
    file, line, place, time_us, offset = data
    return Evidence(file, line, lines[place], _optional_int(time_us), offset)


def _extracted_data(item: Extracted, texts: _Texts) -> list[Any] | dict[str, Any]:
    if isinstance(item, Fact):
        # An array, not an object: a host has hundreds of facts, and the names are the bulk.
        evidence = None if item.evidence is None else texts.evidence_place(item.evidence)
        return [
            "fact",
            *item.process,
            item.name,
            item.value,
            item.time_us,
            item.communicator,
            evidence,
        ]
    values = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    values["process"] = list(item.process)
    values["evidence"] = [texts.evidence_place(evidence) for evidence in item.evidence]
    return {"event": values}


def _extracted(data: Any, evidence: list[Evidence]) -> Extracted:
    if isinstance(data, list):
        kind, host, pid, life, name, value, time_us, communicator, place = data
        if kind != "fact" or not (time_us is None or type(time_us) is int):
            raise ValueError(f"not a fact: {data!r:.200}")
        return Fact(
            ProcessKey(host, pid, life),
            name,
            value,
            time_us,
            communicator,
            None if place is None else evidence[place],
        )
    values = dict(data["event"])
    values["process"] = ProcessKey(*values["process"])
    values["evidence"] = [evidence[place] for place in values["evidence"]]
    for name in _TUPLE_FIELDS:
        if values.get(name) is not None:
            values[name] = tuple(values[name])
    return CollectiveEvent(**values)


_TUPLE_FIELDS = ("codes", "connected_ranks")
"""The event's fields that are tuples (JSON gives lists)."""


# -- the rule events -----------------------------------------------------------------------------


def _rule_data(rule: Rule) -> dict[str, Any]:
    return {"spec": dataclasses.asdict(rule.spec), "pack": rule.pack, "origin": rule.origin}


def _rule(id_: object, data: Mapping[str, Any]) -> Rule:
    spec = RuleSpec.from_data(data["spec"])
    if spec.id != id_:
        raise ValueError(f"rule {id_} holds the spec of {spec.id}")
    return Rule(spec, str(data["pack"]), str(data["origin"]), _never, None)


def _never(_: Record) -> bool:
    """The condition of a rule read back: it matches nothing (a summary's rules are not run)."""
    return False


_NOT_KEPT = frozenset({"source", "body_parser", "body_markers", "_lowered_text"})
"""A record's attributes that are not its values: the source is kept on its own; the body's
parser and markers are spent once the body fields are derived; the lower-cased text is a
cache."""


def _record_data(record: Record) -> dict[str, Any]:
    record.derive_body_fields()
    values = {name: value for name, value in vars(record).items() if name not in _NOT_KEPT}
    source = record.source
    return {
        "values": values,
        "source": None if source is None else dataclasses.asdict(source),
    }


def _record(data: Mapping[str, Any]) -> Record:
    record = Record.__new__(Record)
    vars(record).update(data["values"])
    source = data["source"]
    record.source = None if source is None else SourceInfo(**source)
    if not isinstance(record.original, str):
        raise ValueError("a record without its text")
    return record


def _event_data(event: Event, texts: _Texts) -> dict[str, Any]:
    return {
        "rule": event.rule.id,
        "trigger": _record_data(event.trigger),
        "fields": event.fields,
        "before": texts.places(event.before),
        "after": texts.places(event.after),
        "context_span": event.context_span,
        "context_complete": event.context_complete,
        "count": event.count,
        "first_us": event.first_us,
        "last_us": event.last_us,
    }


def _event(data: Mapping[str, Any], rules: Mapping[str, Rule], lines: list[str]) -> Event:
    event = Event(
        rules[data["rule"]],
        _record(data["trigger"]),
        {str(name): str(value) for name, value in data["fields"].items()},
        [lines[place] for place in data["before"]],
    )
    event.after = [lines[place] for place in data["after"]]
    span = data["context_span"]
    event.context_span = None if span is None else (int(span[0]), int(span[1]))
    event.context_complete = bool(data["context_complete"])
    event.count = int(data["count"])
    event.first_us = _optional_int(data["first_us"])
    event.last_us = _optional_int(data["last_us"])
    return event
