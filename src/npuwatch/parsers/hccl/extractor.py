"""From records to topology facts and collective-failure events, one process at a time.

The extractor is fed the records of any number of streams (files) in any order and keeps, per
process, only what an unfinished multi-line block needs: the open task-exception block of each
thread (threads interleave their lines), the open root-info event, an AI-CPU notify line
waiting for its `group:` line, the communicator named by the last Key Info line. It reads
records, never files: `scan` feeds it from a tree, the agent from its tail.

Only the records that can matter are looked at in Python (selection.py picks them); the facts
are named tuples and a line's evidence is made once for all it says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from npuwatch.bounded_numbers import fitting_int
from npuwatch.parsers.hccl import failures
from npuwatch.parsers.hccl.failure_events import FailureEvents
from npuwatch.parsers.hccl.identity import (
    HCCL_ENV_VARIABLE,
    identity,
    mentions_identity,
    setting,
    timeouts,
    tls_state,
)
from npuwatch.parsers.hccl.init_lines import mentions_network, network_facts
from npuwatch.parsers.hccl.model import COMMUNICATOR_FACTS, Extracted, Fact, ProcessKey
from npuwatch.parsers.hccl.process_state import ProcessState
from npuwatch.parsers.hccl.selection import HCCL_LOGGERS, device_positions, host_positions
from npuwatch.parsers.hccl.where import Lines, Where
from npuwatch.records import Record
from npuwatch.vocabulary import ERROR_LEVELS

DEFAULT_EVENTS_PER_PROCESS = 64
"""Distinct failure events kept per process; more are counted, not kept."""
_DEVICE_KINDS = frozenset({"device", "device-app"})
_FILES_REMEMBERED = 4096


class CollectiveExtractor:
    """Turns records into Facts and CollectiveEvents (see parsers/hccl/model.py)."""

    def __init__(self, events_per_process: int = DEFAULT_EVENTS_PER_PROCESS) -> None:
        self._events = FailureEvents(events_per_process)
        self._processes: dict[tuple[str, int], ProcessState] = {}
        self._separate: dict[str, set[int]] = {}
        """Per file, its owner once seen in its headers, and the header pids that stated an
        identity of their own in it after that."""

    def feed(self, records: Sequence[Record], first_line: int | None = None) -> list[Extracted]:
        """Facts and the events completed by these consecutive records of one stream;
        `first_line` is the line number of the first record (for evidence)."""
        out: list[Extracted] = []
        if not records:
            return out
        source = records[0].source
        on_device = source is not None and source.kind in _DEVICE_KINDS
        positions: Iterable[int]
        positions = device_positions(records) if on_device else host_positions(records)
        lines = Lines(records, first_line)
        events = self._events
        for position in positions:
            record = records[position]
            state = self._state(record, out)
            if state is None:
                continue
            text = record.text
            where = Where(lines, position, record)
            is_error = record.level in ERROR_LEVELS
            if on_device:
                self._device(state, text, where, out)
            elif record.logger in HCCL_LOGGERS:
                self._hccl(state, text, is_error, where, out)
            elif not is_error and mentions_network(text):  # HCCP's listen and connect lines
                self._network(state, text, where, out)
            elif is_error and record.logger is None and _quotes_hccl(text):
                # a framework's screen output quoting HCCL's heartbeat verdict (EI0002 …) or
                # the two ends of an error CQE (EI0013)
                self._events.failure(state, text, where, out)
            if is_error:
                events.first_error(state, where, out)
        last = records[-1]
        if last.timestamp_us is not None:
            state = self._state(last, out)
            if state is not None:
                out.append(Fact(state.key, "heard", last.timestamp_us, last.timestamp_us))
        return out

    def finish(self) -> list[Extracted]:
        """Close every open block: the end of the input."""
        out: list[Extracted] = []
        for state in self._processes.values():
            self._events.close_all(state, out)
            if state.dropped:
                out.append(Fact(state.key, "events_dropped", state.dropped, None))
        return out

    def close(self, host: str, pid: int) -> list[Extracted]:
        """Close the open blocks of one process: it went quiet (a live reader's end of input,
        which otherwise never comes for the last block a dying process wrote)."""
        out: list[Extracted] = []
        state = self._processes.get((host, pid))
        if state is not None:
            self._events.close_all(state, out)
        return out

    def forget(self, host: str, pid: int) -> None:
        """Drop what is kept of a process long silent (bounded memory in a live reader)."""
        self._processes.pop((host, pid), None)

    # -- per record ---------------------------------------------------------------------------

    def _file_pids(self, path: str | None) -> set[int]:
        """The pids seen in a file's headers that own lines there; the oldest files are
        forgotten past a bound (an agent runs for months while plogs roll over)."""
        key = path or ""
        found = self._separate.get(key)
        if found is None:
            if len(self._separate) >= _FILES_REMEMBERED:
                del self._separate[next(iter(self._separate))]
            found = self._separate[key] = set()
        return found

    def _owner(self, record: Record) -> int | None:
        """The process a record belongs to (CORRELATION.md §5.4). A device log is its file's
        process. In a plog, a line whose header pid is not the file's belongs to the file's
        owner (a forked child, a relayed line, an older CANN that mixed pids in one file); a
        file whose owner never wrote in it belongs wholly to its owner. Where the owner did
        write, another pid that states an identity of its own (an Entry- or Key Info line) is
        a process of its own from then on."""
        source = record.source
        pid = record.pid
        if source is None or source.pid is None:
            return pid if pid is not None else _stated_pid(record.text)
        if source.kind in _DEVICE_KINDS or pid is None:
            return source.pid
        if pid == source.pid:
            # the owner's own header: from here on, another pid that states an identity of
            # its own in this file is a process of its own
            self._file_pids(source.path).add(pid)
            return pid
        separate = self._file_pids(source.path)
        if pid in separate:
            return pid
        if mentions_identity(record.text) and source.pid in separate:
            separate.add(pid)
            return pid
        return source.pid

    def _state(self, record: Record, out: list[Extracted]) -> ProcessState | None:
        source = record.source
        host = (source.host if source is not None else None) or ""
        pid = self._owner(record)
        if pid is None:
            return None
        state = self._processes.get((host, pid))
        if state is None:
            state = self._processes[(host, pid)] = ProcessState(ProcessKey(host, pid))
            time_us = record.timestamp_us
            if record.process_name:
                out.append(Fact(state.key, "process_name", record.process_name, time_us))
            if source is not None and source.kind in _DEVICE_KINDS and source.device is not None:
                out.append(Fact(state.key, "phy_device", source.device, time_us))
        return state

    def _hccl(
        self, state: ProcessState, text: str, is_error: bool, where: Where, out: list[Extracted]
    ) -> None:
        if "[HCCL_ENV]" in text:
            self._environment(state, text, where, out)
        elif "HcclCommResume:success" in text or ("HcclCommResume V" in text and "success" in text):
            self._events.close_all(state, out)  # a recovery: the failures before it are over
            out.append(_fact(state, "resumed", True, where))
            return
        if mentions_identity(text):
            self._identity(state, text, where, out)
        if mentions_network(text):
            self._network(state, text, where, out)
        ranks = failures.connected_ranks(text)
        if ranks is not None:
            self._events.connected(state, ranks, where)
            return
        if state.rootinfo is not None and is_error and "identifier[" in text:
            # (`Init failed … rootInfo identifier[..]`: an INFO line naming a communicator may
            # come from another file, read after this one, of another init)
            self._events.close_rootinfo(state, text, out)
        if is_error or "Cluster Exception Location" in text or "] status[" in text:
            self._events.failure(state, text, where, out)

    def _environment(
        self, state: ProcessState, text: str, where: Where, out: list[Extracted]
    ) -> None:
        match = HCCL_ENV_VARIABLE.search(text)
        if match is not None:
            out.append(_fact(state, "hccl_env", match[1], where))
        said = setting(text)
        if said is not None:
            out.append(_fact(state, "setting", said, where))
        for name, value, _ in timeouts(text):
            out.append(_fact(state, name, value, where))

    def _identity(self, state: ProcessState, text: str, where: Where, out: list[Extracted]) -> None:
        older = ("timeOut[" in text or "_TIMEOUT set by" in text) and "[HCCL_ENV]" not in text
        for name, value, _ in timeouts(text) if older else []:  # ([HCCL_ENV]: _environment)
            out.append(_fact(state, name, value, where))
        said = identity(text)
        if "[Communicator Key Info]" in text:
            state.key_info_communicator = next((c for _, _, c in said if c), None)
        elif "[LocalRank Key Info]" in text:
            said = [
                (n, v, state.key_info_communicator if n in COMMUNICATOR_FACTS else c)
                for n, v, c in said
            ]
        init: bool | None = None  # an init line names the communicator a root-info timeout is of
        for name, value, communicator in said:
            if name in COMMUNICATOR_FACTS and communicator is not None:
                if init is None:
                    init = "Entry-" in text or "SetupAgent" in text or "RootInfoDetect" in text
                if init:
                    state.init_communicator = communicator
                if state.pending_root and name != "root":
                    state.pending_root = False
                    out.append(_fact(state, "root", True, where, communicator))
            if name == "root" and communicator is None:
                state.pending_root = True
                continue
            out.append(_fact(state, name, value, where, communicator))
        rendezvous = next((c for n, _, c in said if n in COMMUNICATOR_FACTS and c), None)
        if rendezvous is not None and _after_exchange(text):
            out.append(_fact(state, "rendezvous", True, where, rendezvous))

    def _network(self, state: ProcessState, text: str, where: Where, out: list[Extracted]) -> None:
        for name, value, communicator in network_facts(text):
            out.append(_fact(state, name, value, where, communicator))

    def _device(self, state: ProcessState, text: str, where: Where, out: list[Extracted]) -> None:
        self._events.end_aicpu_wait(state, text, where, out)
        tls = tls_state(text) if "TLS SWITCH" in text else None
        if tls is not None:
            out.append(_fact(state, "tls", tls, where))
        self._events.device_failure(state, text, where, out)


def _stated_pid(text: str) -> int | None:
    """The pid of CANN's error-message header (`[PID: 335] 2026-03-13-06:55:06.896.485 …`)
    quoted in a line that has no pid of its own (a framework's watchdog or traceback)."""
    at = text.find("[PID: ")
    if at < 0:
        return None
    end = text.find("]", at)
    return fitting_int(text[at + 6 : end]) if end > 0 else None


def _quotes_hccl(text: str) -> bool:
    return "Cluster Exception Location" in text or "Peer information:" in text


def _after_exchange(text: str) -> bool:
    """Whether an init line is printed after the root-info exchange completed (a rendezvous
    of every member), not at the init entry or agent setup (CORRELATION.md §5.8)."""
    return (
        "hcclCommInitInfo" in text
        or "Key Info]" in text
        or ("success" in text and "take time" in text and "GetRootInfo" not in text)
    )


def _fact(
    state: ProcessState,
    name: str,
    value: str | float | bool,
    where: Where,
    communicator: str | None = None,
) -> Fact:
    return Fact(
        state.key,
        name,  # type: ignore[arg-type]
        value,
        where.record.timestamp_us,
        communicator,
        where.evidence(),
    )
