"""An in-process agent on a temporary log tree, and what it journaled, for exact-count tests."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import Config
from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.metrics import SelfMetrics

HEADER = "[{level}] HCCL({pid},python3):2025-09-14-09:{minute:02d}:{second:02d}.{milli:03d}.000 [hccl.cc:42] [{pid}]"


def plog_line(pid: int, number: int, level: str = "INFO", text: str = "step") -> str:
    """A CANN plog line that carries its own sequence number (one a second, per process)."""
    minute, second = divmod(number // 1000 % 3600, 60)
    return (
        HEADER.format(level=level, pid=pid, minute=minute, second=second, milli=number % 1000)
        + f" {text} {number}"
    )


def plog_path(root: Path, pid: int, stamp: int = 0) -> Path:
    folder = root / "debug" / "plog"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"plog-{pid}_20250914093300{stamp:03d}.log"


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def fast_config(logs: Path, state: Path, **sources: Any) -> Config:
    settings: dict[str, Any] = {
        "roots": [str(logs)],
        "rescan_interval": 0.3,
        "idle_flush": 0.5,
        "idle_close": 2.0,
        "deleted_grace": 2.0,
    }
    settings.update(sources)
    return Config.model_validate(
        {
            "agent": {"state_directory": str(state), "host_name": "node-1", "timezone": "UTC"},
            "sources": settings,
            "journal": {"commit_interval": 0.05, "sync": "normal"},
            # Device polling has tests of its own (tests/collector/test_npu_smi_poller.py).
            "devices": {"enabled": False},
            # A port of its own for each agent: tests start many, some at once.
            "sinks": {"prometheus": {"listen": "127.0.0.1:0"}},
        }
    )


class Harness:
    """Starts and stops agents on one log tree and one state folder, like restarts would."""

    def __init__(self, tmp_path: Path, **sources: Any) -> None:
        self.logs = tmp_path / "logs"
        self.logs.mkdir(exist_ok=True)
        self.state = tmp_path / "state"
        self.sources = sources
        self.agent: Agent | None = None
        self.metrics = SelfMetrics()

    def start(self, **sources: Any) -> Agent:
        settings = {**self.sources, **sources}
        self.metrics = SelfMetrics()
        self.agent = Agent(build(fast_config(self.logs, self.state, **settings), {}), self.metrics)
        self.agent.start()
        assert self.agent.wait_started(10), "the reader did not start"
        return self.agent

    def stop(self) -> None:
        assert self.agent is not None
        assert self.agent.stop(timeout=20), "the agent did not drain"
        self.agent = None

    def crash(self) -> None:
        """Leave like `kill -9` would, as far as a thread can: nothing more is drained or
        committed; the next start reads what is on disk."""
        agent = self.agent
        assert agent is not None
        agent.abandon()
        self.agent = None

    def records(self) -> Iterator[StoredRecord]:
        with JournalReader(self.state / "journal") as reader:
            position = Position()
            while True:
                page = reader.blocks_after(position, 64)
                if not page:
                    return
                for _, block in page:
                    yield from decode_block(block.payload)
                position = page[-1][0]

    def block_sources(self) -> Iterator[FileSource]:
        """Where every journal block came from (file key, path …), in journal order."""
        with JournalReader(self.state / "journal") as reader:
            position = Position()
            while page := reader.blocks_after(position, 64):
                for _, block in page:
                    yield block.source
                position = page[-1][0]

    def lines(self) -> Counter[str]:
        counted: Counter[str] = Counter()
        for record in self.records():
            counted.update(record.original.split("\n"))
        return counted

    def wait_for_lines(self, expected: Counter[str], timeout: float = 60.0) -> Counter[str]:
        """Wait until the journal holds at least `expected`, then return what it holds."""
        wait_until(lambda: not (expected - self.lines()), timeout)
        return self.lines()


def held_open(path: Path) -> bool:
    """Whether this process (an in-process agent) holds `path` open."""
    for descriptor in Path("/proc/self/fd").iterdir():
        try:
            if descriptor.readlink() == path:
                return True
        except OSError:  # closed since the listing
            continue
    return False


def wait_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not reached within {timeout} s")
