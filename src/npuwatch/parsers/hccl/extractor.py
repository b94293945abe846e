"""From records to topology facts and collective-failure events, one process at a time.

The extractor is fed the records of any number of streams (files) in any order and keeps, per
process, only what an unfinished multi-line block needs: the open task-exception block of each
thread (threads interleave their lines), the open root-info event, an AI-CPU notify line
waiting for its `group:` line, the communicator named by the last Key Info line. It reads
records, never files: `scan` feeds it from a tree, the agent from its tail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import compress, count, repeat
from operator import and_, attrgetter, ne, or_
from typing import Any

from npuwatch.parsers.hccl import failures
from npuwatch.parsers.hccl.fields import field
from npuwatch.parsers.hccl.identity import (
    HCCL_ENV_VARIABLE,
    identity,
    mentions_identity,
    timeouts,
    tls_state,
)
from npuwatch.parsers.hccl.model import (
    COMMUNICATOR_FACTS,
    CollectiveEvent,
    Extracted,
    Fact,
    ProcessKey,
)
from npuwatch.parsers.hccl.process_state import SAME_FAILURE_US, ProcessState
from npuwatch.parsers.hccl.where import Lines, Where, add_evidence
from npuwatch.records import Record
from npuwatch.vocabulary import ERROR_LEVELS

DEFAULT_EVENTS_PER_PROCESS = 64
"""Distinct failure events kept per process; more are counted, not kept."""
_TID = re.compile(r"\[[^\]]*\]\s*\[(\d+)\]")
_HCCL_LOGGERS = frozenset({"HCCL", "HCCL_OPS", "HCOMM"})
_DEVICE_KINDS = frozenset({"device", "device-app"})
_CQE_LOGGERS = frozenset({"ROCE", "HCCP", "HCCPSRV"})
_LOGGER = attrgetter("logger")
_LEVEL = attrgetter("level")
_ORIGINAL = attrgetter("original")


def _may_matter(text: str) -> bool:
    """Whether an HCCL line that is not an ERROR can say anything to the extractor: identity,
    timeouts, a restart or recovery, the root's connected ranks, HCCL's own verdict, or the
    communicator that closes a root-info event. One `in` after the other: the cheapest test."""
    return (
        mentions_identity(text)
        or "[HCCL_ENV]" in text
        or "HcclCommResume" in text
        or "connected rankinfo" in text
        or "Cluster Exception" in text
        or "identifier[" in text
    )


class CollectiveExtractor:
    """Turns records into Facts and CollectiveEvents (see parsers/hccl/model.py)."""

    def __init__(self, events_per_process: int = DEFAULT_EVENTS_PER_PROCESS) -> None:
        self._cap = events_per_process
        self._processes: dict[tuple[str, int], ProcessState] = {}
        self._out: list[Extracted] = []

    def feed(self, records: Sequence[Record], first_line: int | None = None) -> list[Extracted]:
        """Facts and the events completed by these consecutive records of one stream;
        `first_line` is the line number of the first record (for evidence)."""
        out: list[Extracted] = []
        self._out = out
        if not records:
            return out
        source = records[0].source
        on_device = source is not None and source.kind in _DEVICE_KINDS
        lines = Lines(records, first_line)
        levels = list(map(_LEVEL, records))
        errors = map(ERROR_LEVELS.__contains__, levels)
        hccl = map(_HCCL_LOGGERS.__contains__, map(_LOGGER, records))
        if on_device:  # AI-CPU notify waits (HCCL lines), RDMA errors, the TLS state
            tls = map(str.__contains__, map(_ORIGINAL, records), repeat("TLS SWITCH"))
            positions: Iterable[int] = compress(count(), map(or_, map(or_, errors, hccl), tls))
        else:  # HCCL's lines above DEBUG, and ERRORs; the others are passed over in C
            above_debug = map(and_, hccl, map(ne, levels, repeat("DEBUG")))  # None is not DEBUG
            positions = compress(count(), map(or_, above_debug, errors))
        for position in positions:
            record = records[position]
            if (
                not on_device
                and record.level not in ERROR_LEVELS
                and not _may_matter(record.original)
            ):
                continue  # most of HCCL's INFO lines: operators, tasks, resources
            state = self._state(record)
            if state is None:
                continue
            text = record.text
            where = Where(lines, position)
            level = record.level
            if on_device:
                self._device(state, record, text, where)
            elif record.logger in _HCCL_LOGGERS:
                self._hccl(state, record, text, level in ERROR_LEVELS, where)
            if level in ERROR_LEVELS:
                self._error(state, record, text, record.logger, where)
        last = records[-1]
        if last.timestamp_us is not None:
            state = self._state(last)
            if state is not None:
                out.append(Fact(state.key, "heard", last.timestamp_us, last.timestamp_us))
        self._out = []
        return out

    def finish(self) -> list[Extracted]:
        """Close every open block: the end of the input."""
        out: list[Extracted] = []
        self._out = out
        for state in self._processes.values():
            self._close_all(state)
            if state.dropped:
                out.append(Fact(state.key, "events_dropped", state.dropped, None))
        self._out = []
        return out

    # -- per record ---------------------------------------------------------------------------

    def _state(self, record: Record) -> ProcessState | None:
        source = record.source
        host = (source.host if source is not None else None) or ""
        pid = record.pid
        if source is not None and (source.kind in _DEVICE_KINDS or pid is None):
            pid = source.pid if source.pid is not None else pid
        if pid is None:
            return None
        state = self._processes.get((host, pid))
        if state is None:
            state = self._processes[(host, pid)] = ProcessState(ProcessKey(host, pid))
            if record.process_name:
                self._fact(state, "process_name", record.process_name, record, None)
            if source is not None and source.kind in _DEVICE_KINDS and source.device is not None:
                self._fact(state, "phy_device", source.device, record, None)
        return state

    def _hccl(
        self,
        state: ProcessState,
        record: Record,
        text: str,
        is_error: bool,
        where: Where,
    ) -> None:
        if "[HCCL_ENV]" in text:
            self._environment(state, record, text, where)
        elif "HcclCommResume:success" in text or ("HcclCommResume V" in text and "success" in text):
            self._resume(state, record, where)
            return
        if mentions_identity(text):
            self._identity(state, record, text, where)
        ranks = failures.connected_ranks(text)
        if ranks is not None:
            event = state.rootinfo or self._open_rootinfo(state, record, {"root_side": True}, where)
            event.connected_ranks = (event.connected_ranks or ()) + ranks
            event.root_side = True
            add_evidence(event, record, where)
            return
        if state.rootinfo is not None and "identifier[" in text:
            self._close_rootinfo(state, text)
        if is_error or "Cluster Exception Location" in text:
            self._failure(state, record, text, where)

    def _environment(self, state: ProcessState, record: Record, text: str, where: Where) -> None:
        match = HCCL_ENV_VARIABLE.search(text)
        if match is not None:
            self._fact(state, "hccl_env", match[1], record, where)
        for name, value, _ in timeouts(text):
            self._fact(state, name, value, record, where)

    def _identity(self, state: ProcessState, record: Record, text: str, where: Where) -> None:
        for name, value, _ in timeouts(text) if "timeOut[" in text else []:
            self._fact(state, name, value, record, where)
        said = identity(text)
        if "[Communicator Key Info]" in text:
            state.key_info_communicator = next((c for _, _, c in said if c), None)
        elif "[LocalRank Key Info]" in text:
            said = [
                (n, v, state.key_info_communicator if n in COMMUNICATOR_FACTS else c)
                for n, v, c in said
            ]
        for name, value, communicator in said:
            if name in COMMUNICATOR_FACTS and communicator is not None:
                if "Entry-" in text or "SetupAgent" in text or "RootInfoDetect" in text:
                    state.init_communicator = communicator
                if state.pending_root and name != "root":
                    state.pending_root = False
                    self._fact(state, "root", True, record, where, communicator)
            if name == "root" and communicator is None:
                state.pending_root = True
                continue
            self._fact(state, name, value, record, where, communicator)

    def _failure(self, state: ProcessState, record: Record, text: str, where: Where) -> None:
        tid = _thread(record, text)
        base = failures.task_base(text)
        if base is not None:
            open_block = state.blocks.pop(tid, None)
            if open_block is not None:
                self._emit(state, open_block)
            event = self._event(state, record, base["kind"], where, tag=base["tag"])
            state.blocks[tid] = event
            return
        block = state.blocks.get(tid)
        if block is not None and (
            "Task run failed" in text or "remote rank" in text or "report error_message" in text
        ):
            self._detail(block, failures.task_detail(text) or {}, record, where)
            return
        for read in (
            failures.link_row(text),
            failures.socket_line(text),
            failures.transport_init(text),
            failures.cqe(text),
            failures.cluster_exception(text),
        ):
            if read is not None:
                self._single(state, record, read, where)
                return
        root_read = failures.rootinfo(text)
        if root_read is not None:
            opened = state.rootinfo
            if opened is None:
                self._open_rootinfo(state, record, root_read, where)
            else:
                opened.root_side = opened.root_side or bool(root_read.get("root_side"))
                add_evidence(opened, record, where)
            return
        if "FFTS+ run failed" in text:
            self._single(state, record, {"kind": "ffts"}, where)
        elif "Task run failed" in text and ("remoteRank[" in text or "remote rank" in text):
            # one-line task failures of older releases: `Task run failed, tag[..], remoteRank[n]`
            event = self._event(state, record, "notify", where, tag=None)
            self._detail(event, failures.task_detail(text) or {}, record, where)
            self._emit(state, event)

    def _device(self, state: ProcessState, record: Record, text: str, where: Where) -> None:
        waiting = state.aicpu_waiting
        if waiting is not None:
            state.aicpu_waiting = None
            group = failures.group_of(text)
            if group:
                waiting.communicator = group
                add_evidence(waiting, record, where)
            self._emit(state, waiting)
        tls = tls_state(text) if "TLS SWITCH" in text else None
        if tls is not None:
            self._fact(state, "tls", tls, record, where)
        read = failures.aicpu_notify(text)
        if read is not None:
            event = self._event(state, record, "aicpu_notify", where, tag=None)
            event.remote_rank = read["remote_rank"]
            event.communicator = read.get("communicator")
            if event.communicator is None:
                state.aicpu_waiting = event
            else:
                self._emit(state, event)
        elif record.level in ERROR_LEVELS and record.logger in _CQE_LOGGERS:
            cqe = failures.cqe(text)
            if cqe is not None:
                self._single(state, record, cqe, where)

    def _error(
        self,
        state: ProcessState,
        record: Record,
        text: str,
        logger: str | None,
        where: Where,
    ) -> None:
        """The first ERROR of each burst: the correlator takes the first of each life."""
        time_us = record.timestamp_us
        if time_us is None:
            if state.errors_at:
                return
        elif any(abs(time_us - seen) < SAME_FAILURE_US for seen in state.errors_at):
            return
        if len(state.errors_at) >= self._cap:
            return
        state.errors_at.append(time_us if time_us is not None else 0)
        event = CollectiveEvent(
            "error",
            state.key,
            time_us,
            module=logger,
            codes=tuple(record.error_codes),
            evidence=[where.evidence(record)],
        )
        self._out.append(event)

    # -- events -------------------------------------------------------------------------------

    def _event(
        self,
        state: ProcessState,
        record: Record,
        kind: str,
        where: Where,
        tag: str | None,
    ) -> CollectiveEvent:
        event = CollectiveEvent(kind, state.key, record.timestamp_us, tag=tag)  # type: ignore[arg-type]
        event.module = record.logger
        event.codes = tuple(record.error_codes)
        event.evidence.append(where.evidence(record))
        return event

    def _single(
        self, state: ProcessState, record: Record, read: dict[str, Any], where: Where
    ) -> None:
        event = self._event(state, record, read["kind"], where, tag=read.get("tag"))
        for name, value in read.items():
            if name not in ("kind", "own_rank") and value is not None:
                setattr(event, name, value)
        self._emit(state, event)

    def _detail(
        self, event: CollectiveEvent, read: dict[str, Any], record: Record, where: Where
    ) -> None:
        for name in (
            "remote_rank",
            "remote_local",
            "communicator",
            "op_index",
            "timeout_s",
        ):
            value = read.get(name)
            if value is not None and getattr(event, name) in (None, False):
                setattr(event, name, value)
        if read.get("tag") and event.tag is None:
            event.tag = read["tag"]
        if read.get("problem"):
            event.problems.append(str(read["problem"]))
        for code in record.error_codes:
            if code not in event.codes:
                event.codes = (*event.codes, code)
        add_evidence(event, record, where)

    def _open_rootinfo(
        self, state: ProcessState, record: Record, read: dict[str, Any], where: Where
    ) -> CollectiveEvent:
        event = self._event(state, record, "rootinfo", where, tag=None)
        event.root_side = bool(read.get("root_side"))
        event.timeout_s = read.get("timeout_s")
        event.communicator = state.init_communicator
        state.rootinfo = event
        return event

    def _close_rootinfo(self, state: ProcessState, text: str) -> None:
        event = state.rootinfo
        state.rootinfo = None
        if event is None:
            return
        named = field(text, "identifier")
        if named:
            event.communicator = named
        self._emit(state, event)

    def _emit(self, state: ProcessState, event: CollectiveEvent) -> None:
        if state.keep(event, self._cap):
            self._out.append(event)

    def _close_all(self, state: ProcessState) -> None:
        for event in state.close_blocks():
            self._emit(state, event)

    # -- facts -------------------------------------------------------------------------------

    def _fact(
        self,
        state: ProcessState,
        name: str,
        value: str | float | bool,
        record: Record,
        where: Where | None,
        communicator: str | None = None,
    ) -> None:
        evidence = where.evidence(record) if where is not None else None
        self._out.append(
            Fact(state.key, name, value, record.timestamp_us, communicator, evidence)  # type: ignore[arg-type]
        )

    def _resume(self, state: ProcessState, record: Record, where: Where) -> None:
        """A recovery: the failures before it are over; the identity carries on."""
        self._close_all(state)
        self._fact(state, "resumed", True, record, where)


def _thread(record: Record, text: str) -> int:
    match = _TID.match(text)
    if match is not None:
        return int(match[1])
    return record.pid or 0
