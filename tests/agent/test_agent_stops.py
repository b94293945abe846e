"""SIGTERM ends the real agent process in every state it can be in, well within the unit's
TimeoutStopSec (90 s), with its offsets saved: a restart then journals every line exactly once.

The states: rules working through lines a backtracking engine would take hours on, and through
long lines; a debugging-tool output being read by a child; npu-smi hung; the journal's disk
full; start-up; and a stop that itself hangs. Each test bounds a hang, it does not time speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.parsers.debug_entries import DEBUG_KIND
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines as journaled_lines
from tests.agent.telemetry_agent import entries_by_kind
from tests.conftest import FIXTURES
from tests.journal.full_disk import fill, small_tmpfs

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[2]
FAULTY_AGENT = Path(__file__).with_name("faulty_agent.py")
STOP_BOUND_S = 45.0
"""Half the unit's TimeoutStopSec: a process still running this long after SIGTERM hangs."""
DRAIN = "3s"
"""The drain_timeout of these agents (the default is 60 s, for a unit that allows 90)."""


class Agent:
    """`npuwatch agent` as a process on `work/logs`, its stderr in a file read as it runs."""

    def __init__(
        self,
        work: Path,
        fault: str = "none",
        config: str = "",
        state: Path | None = None,
        **settings: str,
    ) -> None:
        self.work = work
        self.stderr_path = work / f"agent-{time.monotonic_ns()}.err"
        (work / "logs").mkdir(exist_ok=True)
        (work / "npuwatch.toml").write_text(config, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NPUWATCH_")}
        env.update(
            PYTHONPATH=f"{REPOSITORY / 'src'}{os.pathsep}{REPOSITORY}",
            NPUWATCH_CONFIG=str(work / "npuwatch.toml"),
            NPUWATCH_AGENT__HOST_NAME="node-1",
            NPUWATCH_AGENT__DRAIN_TIMEOUT=DRAIN,
            NPUWATCH_SOURCES__RESCAN_INTERVAL="300ms",
            NPUWATCH_SOURCES__IDLE_FLUSH="500ms",
            NPUWATCH_JOURNAL__COMMIT_INTERVAL="50ms",
            NPUWATCH_SINKS__PROMETHEUS__LISTEN="127.0.0.1:0",
            NPUWATCH_DEVICES__ENABLED="false",
        )
        env.update(settings)
        state = state or work / "state"
        self.journal = state / "journal"
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(FAULTY_AGENT), fault, "agent", "--root",
                 str(work / "logs"), "--state-directory", str(state)],
                env=env, stdout=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip

    def log(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def wait_started(self) -> None:
        """Until the files are followed (signals before that end the process at once)."""
        wait_until(lambda: "following" in self.log(), timeout=60)

    def lines(self) -> Counter[str]:
        return journaled_lines(self.journal)

    def stop_within(self, bound: float = STOP_BOUND_S) -> int:
        """SIGTERM; the exit status, or a failure (the process killed) after `bound` s."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(bound)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"still running {bound} s after SIGTERM:\n{self.log()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """The agents a test starts, killed if it left one running."""
    started: list[Agent] = []
    yield started
    for agent in started:
        agent.kill()


def all_journaled_by_a_restart(
    work: Path, agents: list[Agent], lines: list[str], state: Path | None = None
) -> None:
    """Start the agent again (no fault) and wait until the journal holds `lines` exactly."""
    again = Agent(work, state=state)
    agents.append(again)
    again.wait_started()
    wait_until(lambda: not (Counter(lines) - again.lines()), timeout=90)
    assert again.stop_within() == 0, again.log()
    assert again.lines() == Counter(lines)


def rules_config(work: Path, *conditions: str) -> str:
    """A configuration with a pack of one rule per condition."""
    rules = "".join(
        f"  - id: site.r{n}\n    title: rule {n}\n    when: {condition}\n    severity: warning\n"
        "    layer: application\n    category: test\n    advice: A test rule.\n"
        for n, condition in enumerate(conditions)
    )
    pack = work / "site.yaml"
    pack.write_text(f"pack: site\nrules:\n{rules}", encoding="utf-8")
    return f'[rules]\npaths = ["{pack}"]\nreload_interval = "1h"\n'


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_lines_a_backtracking_engine_would_take_hours_on_are_all_journaled_and_sigterm_is_seen(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """`(a+)+ \\d+$` and `(x+x+)+y` are what RE2 accepts and Python's re is catastrophic on:
    before, the rules thread held the interpreter's lock on the first such line, nothing was
    journaled from any file, and SIGTERM was not even seen."""
    config = rules_config(tmp_path, "message ~ /(a+)+ \\d+$/", "message ~ /(x+x+)+y/")
    lines = []
    for pid in (700, 701, 702):
        ours = [plog_line(pid, n, "ERROR", "a" * 32 + "!") for n in range(5)]
        ours += [plog_line(pid, n, "INFO", "x" * 32) for n in range(5, 10)]
        ours += [plog_line(pid, n) for n in range(10, 40)]
        append(plog_path(tmp_path / "logs", pid), ours)
        lines += ours
    agent = Agent(tmp_path, config=config)
    agents.append(agent)
    wait_until(lambda: agent.lines() == Counter(lines), timeout=60)
    assert agent.stop_within() == 0, agent.log()
    assert agent.lines() == Counter(lines)


def test_sigterm_while_the_rules_work_through_long_lines_ends_the_agent_with_offsets_saved(
    tmp_path: Path, agents: list[Agent]
) -> None:
    config = rules_config(
        tmp_path,
        "message ~ /(a|aa)+$/",
        "message ~ /(.*a){12}c/",
        "message ~ /a.*a.*a.*a.*b/i",
        "event.original ~ /(a+)+[^a]b/",
    )
    lines = [plog_line(710, n, "ERROR", "a" * 60_000 + "!") for n in range(400)]
    append(plog_path(tmp_path / "logs", 710), lines)
    agent = Agent(tmp_path, config=config)
    agents.append(agent)
    wait_until(lambda: len(agent.lines()) > 0, timeout=60)
    assert agent.stop_within() in (0, 1), agent.log()  # 1: the drain gave up after its time
    assert not agent.lines() - Counter(lines)
    all_journaled_by_a_restart(tmp_path, agents, lines)


def test_sigterm_while_a_debugging_tool_output_is_read_kills_the_reader_and_ends_the_agent(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """The reader is a child that would sleep for ten minutes; before, it was left running
    after the agent left. The output is read by the next start, not taken as unreadable."""
    debug = tmp_path / "debug" / "overflow"
    debug.mkdir(parents=True)
    overflow = FIXTURES / "debug_tools" / "precision" / "overflow"
    (debug / "anomaly_analyze_1740909600000000000.json").write_bytes(
        (overflow / "anomaly_analyze_1740909600000000000.json").read_bytes()
    )
    pids = tmp_path / "child-pids"
    pids.mkdir()
    reader = tmp_path / "sleeping-reader"
    reader.write_text(f'#!/bin/sh\ntouch "{pids}/$$"\nexec sleep 600\n', encoding="utf-8")
    reader.chmod(0o755)
    config = (
        f'[debug_tools]\npaths = ["{debug.parent}"]\nscan_interval = "100ms"\nsettle = "100ms"\n'
    )
    agent = Agent(tmp_path, fault="sleeping-readers", config=config, FAULTY_CHILD=str(reader))
    agents.append(agent)
    try:
        wait_until(lambda: any(pids.iterdir()), timeout=60)
        (child,) = (int(path.name) for path in pids.iterdir())
        assert agent.stop_within() == 0, agent.log()
        wait_until(lambda: process_gone(child), timeout=10)
    finally:
        for path in pids.iterdir():  # the children this test's agent started
            if not process_gone(int(path.name)):
                os.kill(int(path.name), signal.SIGKILL)
    assert "cannot be read" not in agent.log()
    again = Agent(tmp_path, config=config)
    agents.append(again)
    wait_until(lambda: entries_by_kind(again.journal)[DEBUG_KIND] == 1, timeout=60)
    assert again.stop_within() == 0, again.log()


def test_sigterm_while_npu_smi_hangs_kills_it_and_ends_the_agent(
    tmp_path: Path, agents: list[Agent]
) -> None:
    pids = tmp_path / "npu-smi-pids"
    pids.mkdir()
    npu_smi = tmp_path / "npu-smi"
    npu_smi.write_text(f'#!/bin/sh\ntouch "{pids}/$$"\nexec sleep 600\n', encoding="utf-8")
    npu_smi.chmod(0o755)
    config = f'[devices]\nenabled = true\nnpu_smi_command = "{npu_smi} info"\ntimeout = "10m"\n'
    lines = [plog_line(720, n) for n in range(20)]
    append(plog_path(tmp_path / "logs", 720), lines)
    agent = Agent(tmp_path, config=config, NPUWATCH_DEVICES__ENABLED="true")
    agents.append(agent)
    try:
        wait_until(lambda: any(pids.iterdir()), timeout=60)
        (hung,) = (int(path.name) for path in pids.iterdir())
        wait_until(lambda: agent.lines() == Counter(lines[:-1]), timeout=60)
        assert agent.stop_within() == 0, agent.log()
        wait_until(lambda: process_gone(hung), timeout=10)
    finally:
        for path in pids.iterdir():  # the npu-smi this test's agent started
            if not process_gone(int(path.name)):
                os.kill(int(path.name), signal.SIGKILL)
    assert agent.lines() == Counter(lines)
    assert "device readings are off" not in agent.log()


def test_sigterm_while_the_journal_disk_is_full_ends_the_agent_and_a_restart_loses_nothing(
    tmp_path: Path, agents: list[Agent]
) -> None:
    with small_tmpfs(tmp_path / "small-fs", size="4m") as disk:
        state = disk / "state"
        plog = plog_path(tmp_path / "logs", 730)
        before = [plog_line(730, n) for n in range(50)]
        during = [plog_line(730, n) for n in range(50, 5000)]
        append(plog, before)
        agent = Agent(tmp_path, state=state)
        agents.append(agent)
        wait_until(lambda: agent.lines() == Counter(before[:-1]), timeout=60)
        filler = fill(disk)
        append(plog, during)
        wait_until(lambda: "cannot write the journal" in agent.log(), timeout=60)
        assert agent.stop_within() in (0, 1), agent.log()  # 1: nothing could be committed
        filler.unlink()
        assert not agent.lines() - Counter(before + during)
        all_journaled_by_a_restart(tmp_path, agents, before + during, state=state)


def test_sigterm_during_start_up_ends_the_agent_and_a_restart_loses_nothing(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """Signals at several moments of the start (the interpreter, the rules, the first rescan
    of 2,000 files), each followed by a start that is stopped the same way."""
    lines = []
    for pid in range(2000):
        mine = [plog_line(10_000 + pid, n) for n in range(3)]
        append(plog_path(tmp_path / "logs", 10_000 + pid), mine)
        lines += mine
    for delay in (0.0, 0.2, 0.5, 1.0, 2.0):
        agent = Agent(tmp_path)
        agents.append(agent)
        time.sleep(delay)
        assert agent.stop_within() in (0, 1, -signal.SIGTERM), agent.log()
        assert not agent.lines() - Counter(lines)
    all_journaled_by_a_restart(tmp_path, agents, lines)


def test_a_stop_that_hangs_past_the_drain_time_ends_the_process_with_every_threads_stack(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """Closing the journal never returns: 10 s after the drain's time the process leaves anyway
    (before, it hung until systemd killed it), saying where each thread was."""
    lines = [plog_line(740, n) for n in range(100)]
    append(plog_path(tmp_path / "logs", 740), lines)
    agent = Agent(tmp_path, fault="hung-close")
    agents.append(agent)
    wait_until(lambda: agent.lines() == Counter(lines[:-1]), timeout=60)
    assert agent.stop_within() == 1
    log = agent.log()
    assert "Timeout (0:00:13)!" in log and "most recent call first" in log
    assert "in hung_close" in log
    assert agent.lines() == Counter(lines)
