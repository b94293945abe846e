"""The device a process says it runs on, for its records that do not say it themselves.

HCCL names its process's logical device once, at communicator init (`deviceLogicId[3]`,
`logicDevId[3]`, `devLogicId[3]`); the process's later errors (`aclrtSynchronizeStream failed`,
HCCL's own timeouts) name none. A plog is one process's file, so from that line on its
records of that pid carry the device, and so does the file (its `SourceInfo`, which the journal
keeps with each block): `grep --device 3` and the search engine's `ascend.device` find the
process's errors, not only the few that happen to say `device_id=3`.
"""

from __future__ import annotations

import re

from npuwatch.records import Record

_NAMED = re.compile(r"(?:deviceLogicId|logicDevId|devLogicId)\[([0-9]{1,4})\]")


class ProcessDevices:
    """The logical device each process of one stream named, by pid."""

    __slots__ = ("_by_pid",)

    def __init__(self) -> None:
        self._by_pid: dict[int, int] = {}

    def learn(self, record: Record) -> bool:
        """Take the device an HCCL line of a process names (`logicDevId[-1]`, no device yet,
        is not one); whether it named one."""
        body = record.__dict__.get("body") or record.original
        if "LogicId[" not in body and "logicDevId[" not in body:
            return False
        found = _NAMED.search(body)
        if found is None or record.pid is None:
            return False
        self._by_pid[record.pid] = int(found[1])
        return True

    def of(self, pid: int | None) -> int | None:
        return None if pid is None else self._by_pid.get(pid)

    def give(self, record: Record) -> None:
        """Give `record` the device its process named, when it says none (nor its file)."""
        by_pid = self._by_pid
        if not by_pid or record.pid not in by_pid:
            return
        source = record.source
        if source is not None and source.device is not None:
            return
        if record.device is None:
            record.device = by_pid[record.pid]
