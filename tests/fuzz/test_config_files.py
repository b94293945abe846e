"""`npuwatch config check` on any configuration file: it ends with its documented codes and
says what is wrong; and what it accepts, the agent starts with (systemd runs the check as
ExecStartPre: a configuration it passes and the agent then dies on is a restart loop)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import load_config
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.config_files import FIFO, config_table, config_text, toml_text, with_value
from tests.fuzz.config_files import example as complete
from tests.fuzz.contract import assert_kept_the_contract, hang_guard, run_in_process

ES_ENABLED = ("sinks", "elasticsearch", "enabled")
PASSWORD_FILE = ("sinks", "elasticsearch", "password_file")


def write_config(folder: Path, text: str) -> Path:
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    path = folder / "npuwatch.toml"
    path.write_text(text.replace(FIFO, str(fifo)), encoding="utf-8", errors="surrogatepass")
    return path


@fuzz_settings(80)
@given(text=config_text())
@example(text=toml_text(with_value(complete(), ("journal", "commit_interval"), float("inf"))))
@example(text=toml_text(with_value(with_value(complete(), ES_ENABLED, True), PASSWORD_FILE, FIFO)))
def test_config_check_ends_with_a_documented_code_on_any_file(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = write_config(tmp_path_factory.mktemp("config"), text)
    outcome = run_in_process("config", "check", str(path))
    assert_kept_the_contract(outcome)
    if outcome.code == 1:
        assert outcome.stderr.strip(), outcome.describe()


HERMETIC: dict[tuple[str, ...], Any] = {
    ("sources", "users"): [],
    ("sources", "watch"): False,
    ("devices", "enabled"): False,
    ("sinks", "console", "enabled"): False,
    ("sinks", "elasticsearch", "enabled"): False,
    ("sinks", "prometheus", "enabled"): False,
    ("profiling", "paths"): [],
    ("debug_tools", "paths"): [],
    ("rules", "paths"): [],
}
"""What keeps an agent started by a test to itself: its own folders, no server, no device."""


@contextlib.contextmanager
def thread_failures() -> Iterator[list[str]]:
    """The exceptions that end threads started within the block (recorded, then asserted on by
    the caller: nothing is swallowed)."""
    failures: list[str] = []
    previous = threading.excepthook

    def record(hook: threading.ExceptHookArgs) -> None:
        name = hook.thread.name if hook.thread is not None else "?"
        failures.append(f"thread {name}: {hook.exc_type.__name__}: {hook.exc_value}")

    threading.excepthook = record
    try:
        yield failures
    finally:
        threading.excepthook = previous


AGENT_START_S = 30.0


@fuzz_settings(12)
@given(table=config_table(changes=3))
@example(table=with_value(complete(), ("journal", "commit_interval"), float("inf")))
@example(table=with_value(complete(), ("journal", "commit_interval"), 1e12))
@example(table=with_value(complete(), ("sources", "rescan_interval"), "99999999999999999999d"))
def test_the_agent_starts_and_stops_with_every_configuration_the_check_accepts(
    table: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("agent")
    (folder / "logs").mkdir()
    forced = {
        **HERMETIC,
        ("agent", "state_directory"): str(folder / "state"),
        ("sources", "roots"): [str(folder / "logs")],
    }
    for key, value in forced.items():
        table = with_value(table, key, value)
    path = write_config(folder, toml_text(table))
    checked = run_in_process("config", "check", str(path))
    assert_kept_the_contract(checked)
    if checked.code != 0:
        return
    topology = build(load_config(path, {}), {})
    with thread_failures() as failures, hang_guard("the agent's start and stop", AGENT_START_S):
        agent = Agent(topology)
        agent.start()
        try:
            agent.wait_started(AGENT_START_S)
            drained = agent.stop()
        except BaseException:
            agent.abandon()
            raise
        if not drained:  # a drain_timeout of a microsecond is a choice, not a failure
            agent.abandon()
    assert failures == []
