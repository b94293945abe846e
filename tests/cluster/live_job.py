"""A failing collective job on three hosts, written as it happens: the lines of
fixtures/make_collective_trees.py, moved to the present and cut into phases.

Twelve ranks, four a host. Every rank starts and joins the world communicator (identity lines:
the `init` phase); rank 5, on host-b, hits an AI Core exception; every other rank times out
waiting for it, naming rank 5 (the `failure` phase, HCCL_EXEC_TIMEOUT of 300 s after the
fault). The log times are the present, so that the settle rule (the fault plus the timeout and
a grace, on the wall clock) is minutes away while the test runs.
"""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import FIXTURES

HOSTS = ("host-a", "host-b", "host-c")
ROOT_RANK = 5
EXEC_TIMEOUT_S = 300


def _generator() -> ModuleType:
    name = "npuwatch_collective_trees"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "make_collective_trees.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class LiveJob:
    """The job's lines by host, file and phase; `write(phase, host)` appends them."""

    def __init__(self, root: Path, seed: int = 41) -> None:
        gen = _generator()
        self.root = root
        fault_at = datetime(2025, 12, 10, 20, 0, 0, 512_113)
        # Each host's clock runs at the present: the fault happens now (UTC).
        skew = (datetime.now(timezone.utc).replace(tzinfo=None) - fault_at).total_seconds()
        job = gen.Job(seed, hosts=3, exec_s=EXEC_TIMEOUT_S, skew=(int(skew),) * 3)
        job.boot()
        world = job.world()
        self.fault_local = job[ROOT_RANK].local(fault_at)
        gen.aicore_error(job[ROOT_RANK], fault_at)
        for proc in job.procs:
            if proc.rank != ROOT_RANK:
                launch = fault_at - timedelta(milliseconds=90)
                timed_out = launch + job.exec_timeout + timedelta(milliseconds=proc.rank)
                gen.notify_timeout(proc, world, timed_out, ROOT_RANK, 12, launch=launch)
        self.job = job
        self.world = world.ident

    def logs(self, host: str) -> Path:
        return self.root / host / "ascend" / "log"

    def write(self, phase: str, host: str) -> int:
        """Append the lines of `phase` (`init`: before the fault; `failure`: from it on) of
        every file of `host`; how many lines."""
        written = 0
        for proc in self.job.procs:
            if proc.host.name != host:
                continue
            for log, folder, prefix in (
                (proc.run, "run/plog", "plog"),
                (proc.debug, "debug/plog", "plog"),
                (proc.device, f"debug/device-{proc.phy}", "device"),
            ):
                if not log.entries:
                    continue
                lines = self._phase_lines(log, proc, phase)
                if not lines:
                    continue
                stamp = _generator().stamp(proc.local(log.first()))
                path = self.logs(host) / folder / f"{prefix}-{proc.pid}_{stamp}.log"
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as out:
                    out.write("".join(line + "\n" for line in lines))
                written += len(lines)
        return written

    def _phase_lines(self, log: Any, proc: Any, phase: str) -> list[str]:
        cut = self.fault_local
        lines = []
        for moment, line in zip(
            sorted(e[0] for e in log.entries), log.lines(proc.host), strict=True
        ):
            if (proc.local(moment) < cut) == (phase == "init"):
                lines.append(line)
        return lines

    def place(self, rank: int) -> dict[str, Any]:
        """The place the incident should name for a rank."""
        proc = self.job[rank]
        return {"host": proc.host.name, "device": proc.phy, "rank": rank, "pid": proc.pid}
