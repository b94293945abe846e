"""The real agent's state directory is readable by its user only, whatever the umask: under
umask 000 every folder it makes is 0700 and every file 0600 (the journal holds whole log lines),
and a state directory an older version made with the umask's modes is tightened at start."""

from __future__ import annotations

import io
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.agent.runtime import Agent
from npuwatch.agent.topology import build
from npuwatch.config import Config
from npuwatch.metrics import SelfMetrics
from tests.agent.harness import append, fast_config, plog_line, plog_path, wait_until
from tests.agent.journaled import journal_lines
from tests.conftest import FIXTURES
from tests.journal.modes import mode_of, modes_under, umask

pytestmark = pytest.mark.integration  # profiling runs are read by a child process


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """umask 000, the worst case: every mode below comes from the agent, none from the umask."""
    with umask(0o000):
        yield


def config(tmp_path: Path, state: Path) -> Config:
    base = fast_config(tmp_path / "logs", state).model_dump(mode="json")
    # The runs' figures and the list of runs imported are state files; their operators, in
    # the journal, would only crowd the console.
    folders = [str(tmp_path / "profiling")]
    base["profiling"] = {"paths": folders, "scan_interval": 0.2, "journal": False}
    return Config.model_validate(base)


def test_under_umask_000_every_folder_of_the_state_is_0700_and_every_file_0600(
    tmp_path: Path,
) -> None:
    shutil.copytree(FIXTURES / "profiling" / "torch_2rank", tmp_path / "profiling" / "job-42")
    state = tmp_path / "var" / "lib" / "npuwatch"
    lines = [plog_line(4100, n) for n in range(20)]
    console = io.StringIO()
    agent = Agent(build(config(tmp_path, state), {}, console=console), metrics=SelfMetrics())
    agent.start()
    try:
        assert agent.wait_started(10)
        append(plog_path(tmp_path / "logs", 4100), lines)
        wait_until(lambda: journal_lines(state / "journal") == Counter(lines))
        wait_until((state / "profiling-figures.json").is_file)
        wait_until((state / "cursors.json").is_file)
        # While the segment is open SQLite keeps its WAL and shared memory beside it.
        segment = state / "journal" / "segment-00000001.db"
        running = [segment, Path(f"{segment}-wal"), Path(f"{segment}-shm")]
        assert [mode_of(path) for path in running] == [0o600, 0o600, 0o600]
    finally:
        assert agent.stop(timeout=20)
    assert Counter(console.getvalue().splitlines()) == Counter(lines)
    assert modes_under(tmp_path / "var") == {
        ".": 0o700,
        "lib": 0o700,
        "lib/npuwatch": 0o700,
        "lib/npuwatch/agent.lock": 0o600,
        "lib/npuwatch/cursors.json": 0o600,
        "lib/npuwatch/journal": 0o700,
        "lib/npuwatch/journal/segment-00000001.db": 0o600,
        "lib/npuwatch/profiling-figures.json": 0o600,
        "lib/npuwatch/profiling-imported.json": 0o600,
    }


def test_a_state_directory_an_older_version_made_with_the_umask_modes_is_tightened(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    (state / "journal").mkdir(parents=True)
    old_files = {
        "cursors.json": '{"version": 1, "cursors": {}}',
        "profiling-imported.json": '{"version": 1, "runs": {}}',
        "profiling-figures.json": '{"version": 1, "runs": []}',
    }
    for name, content in old_files.items():
        (state / name).write_text(content)
    for path in (state, state / "journal"):
        path.chmod(0o755)  # what umask 022 gave them (a folder others can write is refused)
    for name in old_files:
        (state / name).chmod(0o644)
    agent = Agent(build(config(tmp_path, state), {}, console=io.StringIO()))
    agent.start()
    try:
        assert agent.wait_started(10)
    finally:
        assert agent.stop(timeout=20)
    assert modes_under(state) == {
        ".": 0o700,
        "agent.lock": 0o600,
        "cursors.json": 0o600,
        "journal": 0o700,
        "journal/segment-00000001.db": 0o600,
        "profiling-figures.json": 0o600,
        "profiling-imported.json": 0o600,
    }
