"""Children the agent runs end with its stop: `run_child` is `subprocess.run` with a stop event."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from npuwatch.child_process import ChildStopped, run_child


def test_a_child_that_answers_gives_its_output_and_status() -> None:
    done = run_child([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], 30)
    assert (done.returncode, done.stdout, done.stderr) == (3, b"out\n", b"")


def test_a_set_stop_kills_the_child_and_says_so(tmp_path: Path) -> None:
    started = tmp_path / "started"
    stop = threading.Event()
    code = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(600)"
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            run_child([sys.executable, "-c", code], 600, stop)
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        while not started.exists() and worker.is_alive():
            worker.join(0.05)
    finally:
        stop.set()
        worker.join(30)  # a bound on a hang
    assert not worker.is_alive()
    assert [type(error) for error in outcome] == [ChildStopped]


def test_a_child_past_its_time_is_killed_with_the_usual_timeout_error() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_child([sys.executable, "-c", "import time; time.sleep(600)"], 0.5)


def test_output_larger_than_a_pipe_is_read_whole_across_the_waits() -> None:
    code = (
        "import sys, time; sys.stdout.write('x' * 1_000_000); sys.stdout.flush(); time.sleep(0.5)"
    )
    assert len(run_child([sys.executable, "-c", code], 60, threading.Event()).stdout) == 1_000_000
