"""Collective-failure events put together from a process's ERROR lines (and device logs).

Single-line failures become an event at once; the blocks that span several lines are kept
open in the process's state until they are complete: the task-exception block of each thread
(its base line opens it, the para, groupRank and opData lines fill it in), the root-info event
(closed by the line that names the communicator), the AI-CPU notify wait (whose group may come
on the next line). The readers of each line format are in failures.py.
"""

from __future__ import annotations

import re
from typing import Any

from npuwatch.bounded_numbers import fitting_int
from npuwatch.parsers.hccl import failures, init_lines
from npuwatch.parsers.hccl.fields import field
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact
from npuwatch.parsers.hccl.process_state import SAME_FAILURE_US, ProcessState
from npuwatch.parsers.hccl.where import Where, add_evidence
from npuwatch.vocabulary import ERROR_LEVELS

_TID = re.compile(r"\[[^\]]*\]\s*\[(\d+)\]")
_CQE_LOGGERS = frozenset({"ROCE", "HCCP", "HCCPSRV"})
_SINGLE_LINE_READERS = (
    failures.probe,
    failures.link_row,
    failures.socket_line,
    failures.transport_init,
    failures.cqe,
    failures.cluster_exception,
)
_DETAILS = ("remote_rank", "remote_local", "communicator", "op_index", "timeout_s", "detail")


class FailureEvents:
    """Makes the events of each process, at most `cap` distinct ones a process."""

    def __init__(self, cap: int) -> None:
        self._cap = cap

    def failure(self, state: ProcessState, text: str, where: Where, out: list[Extracted]) -> None:
        """An HCCL ERROR line, or HCCL's cluster-exception verdict."""
        self._settle_stated(state, text, where, out)
        tid = _thread(where, text)
        base = failures.task_base(text)
        if base is not None:
            open_block = state.blocks.pop(tid, None)
            if open_block is not None:
                self._emit(state, open_block, out)
            state.blocks[tid] = _event(state, base["kind"], where, tag=base["tag"])
            state.blocks[tid].op_index = base["op_index"]
            return
        block = state.blocks.get(tid)
        if block is not None and (
            "run failed" in text or "remote rank" in text or "report error_message" in text
        ):
            detail = failures.task_detail(text) or {}
            _detail(block, detail, where)
            _block_identity(state, block, detail, where, out)
            return
        stated = init_lines.stated_failure(text)
        if stated is not None:
            state.stated_open = _filled(_event(state, "init_failure", where, None), stated)
            return
        for reader in _SINGLE_LINE_READERS:
            read = reader(text)
            if read is not None:
                self._single(state, read, where, out)
                return
        opened_root = state.rootinfo
        if opened_root is not None and "tag[" in text and "Connection]" in text:
            # the line after a root-info timeout names the communicator that timed out
            opened_root.communicator = field(text, "tag") or opened_root.communicator
            add_evidence(opened_root, where)
            return
        root_read = failures.rootinfo(text)
        if root_read is not None:
            opened = state.rootinfo
            if opened is None:
                opened = _open_rootinfo(state, root_read, where)
            else:
                opened.root_side = opened.root_side or bool(root_read.get("root_side"))
                add_evidence(opened, where)
            if opened.remote_rank is None and root_read.get("remote_rank") is not None:
                opened.remote_rank = root_read["remote_rank"]
            return
        if "FFTS+ run failed" in text:
            self._single(state, {"kind": "ffts"}, where, out)
        elif "Task run failed" in text and ("remoteRank[" in text or "remote rank" in text):
            # one-line task failures of older releases: `Task run failed, tag[..], remoteRank[n]`
            event = _event(state, "notify", where, tag=None)
            _detail(event, failures.task_detail(text) or {}, where)
            self._emit(state, event, out)

    def connected(self, state: ProcessState, ranks: tuple[int, ...], where: Where) -> None:
        """The root's list of the ranks that did connect: part of its root-info event."""
        event = state.rootinfo or _open_rootinfo(state, {"root_side": True}, where)
        state.connected.extend(ranks)  # (a tuple grown line by line is quadratic: 2,000 lines)
        event.connected_ranks = ()
        event.root_side = True
        add_evidence(event, where)

    def close_rootinfo(self, state: ProcessState, text: str, out: list[Extracted]) -> None:
        """A line naming the communicator (`identifier[..]`) ends the open root-info event."""
        state.settle_connected()
        event = state.rootinfo
        state.rootinfo = None
        if event is None:
            return
        named = field(text, "identifier")
        if named:
            event.communicator = named
        self._emit(state, event, out)

    def end_aicpu_wait(
        self, state: ProcessState, text: str, where: Where, out: list[Extracted]
    ) -> None:
        """The device-log line after an AI-CPU notify wait without its group: the group, or
        nothing (the wait is sent as it is)."""
        waiting = state.aicpu_waiting
        if waiting is not None:
            state.aicpu_waiting = None
            group = failures.group_of(text)
            if group:
                waiting.communicator = group
                add_evidence(waiting, where)
            self._emit(state, waiting, out)

    def device_failure(
        self, state: ProcessState, text: str, where: Where, out: list[Extracted]
    ) -> None:
        """A device-log line: AI-CPU notify waits, and CQE errors of ROCE and HCCP."""
        read = failures.aicpu_notify(text)
        record = where.record
        if read is not None:
            event = _event(state, "aicpu_notify", where, tag=None)
            event.remote_rank = read["remote_rank"]
            event.communicator = read.get("communicator")
            if event.communicator is None:
                state.aicpu_waiting = event
            else:
                self._emit(state, event, out)
        elif record.level in ERROR_LEVELS and record.logger in _CQE_LOGGERS:
            cqe = failures.cqe(text)
            if cqe is not None:
                self._single(state, cqe, where, out)
        if record.level in ERROR_LEVELS:
            self._settle_stated(state, text, where, out)
            stated = init_lines.stated_failure(text)
            if stated is not None:
                state.stated_open = _filled(_event(state, "init_failure", where, None), stated)

    def first_error(self, state: ProcessState, where: Where, out: list[Extracted]) -> None:
        """The first ERROR of each burst: the correlator takes the first of each life."""
        record = where.record
        time_us = record.timestamp_us
        errors_at = state.errors_at
        if time_us is None:
            if errors_at:
                return
        elif errors_at and (
            abs(time_us - errors_at[-1]) < SAME_FAILURE_US  # the common case: the same burst
            or any(abs(time_us - seen) < SAME_FAILURE_US for seen in errors_at)
        ):
            return
        if len(errors_at) >= self._cap:
            return
        errors_at.append(time_us if time_us is not None else 0)
        out.append(
            CollectiveEvent(
                "error",
                state.key,
                time_us,
                module=record.logger,
                codes=tuple(record.error_codes),
                evidence=[where.evidence()],
            )
        )

    def close_all(self, state: ProcessState, out: list[Extracted]) -> None:
        """Every block still open, as it is: the input ended, or the process recovered."""
        for event in state.close_blocks():
            self._emit(state, event, out)

    def _single(
        self, state: ProcessState, read: dict[str, Any], where: Where, out: list[Extracted]
    ) -> None:
        self._emit(state, _filled(_event(state, read["kind"], where, read.get("tag")), read), out)
        own_ip = read.get("own_ip")
        if own_ip is not None:  # the row's source: this device's own address (§5.14)
            out.append(
                Fact(
                    state.key,
                    "link_ip",
                    own_ip,
                    where.record.timestamp_us,
                    None,
                    where.evidence(),
                )
            )

    def _settle_stated(
        self, state: ProcessState, text: str, where: Where, out: list[Extracted]
    ) -> None:
        """The ERROR line after a stated init failure: the communicator it names (HCCL's call
        trace names it a line or two later) is the failure's, then the failure is sent."""
        event = state.stated_open
        if event is None:
            return
        state.stated_open = None
        named = field(text, "identifier") or failures.group_of(text)
        tag = field(text, "tag")
        if named:
            event.communicator = named
            add_evidence(event, where)
        elif tag:
            event.tag = tag
            add_evidence(event, where)
        self._emit(state, event, out)

    def _emit(self, state: ProcessState, event: CollectiveEvent, out: list[Extracted]) -> None:
        if state.keep(event, self._cap):
            out.append(event)


def _event(state: ProcessState, kind: str, where: Where, tag: str | None) -> CollectiveEvent:
    record = where.record
    return CollectiveEvent(
        kind,  # type: ignore[arg-type]
        state.key,
        record.timestamp_us,
        tag=tag,
        module=record.logger,
        codes=tuple(record.error_codes),
        evidence=[where.evidence()],
    )


def _block_identity(
    state: ProcessState,
    block: CollectiveEvent,
    read: dict[str, Any],
    where: Where,
    out: list[Extracted],
) -> None:
    """A groupRank line gives the process's rank and the communicator's size: a process whose
    init lines were not collected still counts as a member (CORRELATION.md §5.5), and the
    ranks that never reported are found against the size."""
    communicator = read.get("communicator")
    if communicator is None:
        return
    # no time: a failure is no rendezvous, and must not move the end of init (clocks.py)
    evidence = where.evidence()
    rank, count = read.get("own_rank"), read.get("rank_count")
    if rank is not None:
        out.append(Fact(state.key, "rank", rank, None, communicator, evidence))
    if count is not None:
        out.append(Fact(state.key, "rank_count", count, None, communicator, evidence))


def _filled(event: CollectiveEvent, read: dict[str, Any]) -> CollectiveEvent:
    for name, value in read.items():
        if name == "problem":
            event.problems.append(str(value))
        elif name not in ("kind", "own_rank", "own_ip", "tag") and value is not None:
            setattr(event, name, value)
    return event


def _detail(event: CollectiveEvent, read: dict[str, Any], where: Where) -> None:
    for name in _DETAILS:
        value = read.get(name)
        if value is not None and getattr(event, name) in (None, False):
            setattr(event, name, value)
    if read.get("tag") and event.tag is None:
        event.tag = read["tag"]
    if read.get("problem"):
        event.problems.append(str(read["problem"]))
    for code in where.record.error_codes:
        if code not in event.codes:
            event.codes = (*event.codes, code)
    add_evidence(event, where)


def _open_rootinfo(state: ProcessState, read: dict[str, Any], where: Where) -> CollectiveEvent:
    event = _event(state, "rootinfo", where, tag=None)
    event.root_side = bool(read.get("root_side"))
    event.timeout_s = read.get("timeout_s")
    event.communicator = state.init_communicator
    state.rootinfo = event
    state.connected = []
    return event


def _thread(where: Where, text: str) -> int:
    match = _TID.match(text)
    thread = None if match is None else fitting_int(match[1])
    if thread is not None:
        return thread
    return where.record.pid or 0
