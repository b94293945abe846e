"""What every `npuwatch` command keeps, whatever a user or a log file gives it: it ends, its exit
code is a documented one (0 ok, 1 findings, 2 usage or input error), and no Python exception
escapes (in a process of its own that would be a traceback on stderr and exit 1, which means
"findings").

Commands run in a forked copy of this process (`npuwatch.cli.main`, output captured: a process
that costs a fork, not a Python start, where hundreds of examples must fit the budget) or in a
process of their own (`run_npuwatch`). Neither hides what the command raises: an exception is a
traceback on stderr and exit 1, and the test fails on it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import pkgutil
import select
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from npuwatch.cli import main
from tests.npuwatch_command import clean_environment, run_npuwatch

DOCUMENTED_EXIT_CODES = frozenset({0, 1, 2})
TRACEBACK = "Traceback (most recent call last)"
HANG_S = 10.0
"""How long one command on one small generated input may take before it counts as hung (they
take tens of milliseconds; a hang is a FIFO opened for reading, a regular expression that
backtracks for ever, a loop that never ends)."""


class Hung(BaseException):
    """A command did not finish within its time (a BaseException, so that no `except Exception`
    in the code under test can swallow it)."""


@contextlib.contextmanager
def hang_guard(what: str, seconds: float = HANG_S) -> Iterator[None]:
    """Raise Hung in this (the main) thread when the block takes longer than `seconds`; a
    blocking open() or read() and a regular expression are interrupted as well."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"{what} did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Outcome:
    """How a command ended: its exit code and what it printed."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"npuwatch {' '.join(self.args)}\nexit {self.code}\n"
            f"--- stderr\n{self.stderr[-3000:]}\n--- stdout\n{self.stdout[-1500:]}"
        )


def run_in_process(*args: str, seconds: float = HANG_S) -> Outcome:
    """`npuwatch ARGS` by `cli.main` in a forked copy of this process: what a process of its own
    does (an exception is a traceback on stderr and exit 1; a warning is a line on stderr), at
    the cost of a fork rather than of a Python start. Killed after `seconds`: a blocking open()
    inside C code (SQLite opening a FIFO) ignores a signal, a killed child does not."""
    _import_every_module()
    readers, writers = zip(os.pipe(), os.pipe(), strict=True)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child leaves by os._exit
        _run_child(list(args), writers)
    for end in writers:
        os.close(end)
    chunks: dict[int, list[bytes]] = {end: [] for end in readers}
    open_ends = set(readers)
    deadline = time.monotonic() + seconds
    try:
        while open_ends:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(child, signal.SIGKILL)
                raise Hung(f"npuwatch {' '.join(args)} did not finish within {seconds:g} s")
            ready, _, _ = select.select(list(open_ends), [], [], left)
            for end in ready:
                chunk = os.read(end, 1 << 16)
                if chunk:
                    chunks[end].append(chunk)
                else:
                    open_ends.discard(end)
    finally:
        for end in readers:
            os.close(end)
        _, status = os.waitpid(child, 0)
    stdout, stderr = (b"".join(chunks[end]).decode("utf-8", "replace") for end in readers)
    return Outcome(tuple(args), os.waitstatus_to_exitcode(status), stdout, stderr)


@functools.cache
def _import_every_module() -> None:
    """Import npuwatch whole, once, before the first fork: a child then starts with every
    module it needs loaded (the commands import theirs lazily, and a child's imports die with
    it), which makes an example cost milliseconds instead of a tenth of a second."""
    import npuwatch

    for module in pkgutil.walk_packages(npuwatch.__path__, "npuwatch."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    import pandas  # noqa: F401 - the profiling and debugging-tool readers' own lazy import


def _run_child(args: list[str], writers: tuple[int, ...]) -> None:
    """In the forked child: run the command with its output on the pipes, then leave."""
    code = 70
    try:
        os.dup2(writers[0], 1)
        os.dup2(writers[1], 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        warnings.resetwarnings()  # the suite's "error" filter is not the command's
        warnings.simplefilter("default")
        logging.root.handlers.clear()  # pytest's capture: a command's log lines go to stderr
        try:
            code = main(args)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run_as_process(
    *args: str, cwd: Path | None = None, seconds: float = 60.0, **environment: str
) -> Outcome:
    """`npuwatch ARGS` in a process of its own (`python -m npuwatch`), killed after `seconds`."""
    try:
        result = run_npuwatch(*args, cwd=cwd, env=clean_environment(**environment), timeout=seconds)
    except subprocess.TimeoutExpired:
        raise Hung(f"npuwatch {' '.join(args)} did not finish within {seconds:g} s") from None
    return Outcome(tuple(args), result.returncode, result.stdout, result.stderr)


def assert_kept_the_contract(outcome: Outcome, codes: Sequence[int] = (0, 1, 2)) -> None:
    """A documented exit code, no traceback, and a reason on stderr for a usage or input
    error."""
    assert outcome.code in codes and outcome.code in DOCUMENTED_EXIT_CODES, outcome.describe()
    assert TRACEBACK not in outcome.stderr, outcome.describe()
    if outcome.code == 2:
        assert outcome.stderr.strip(), outcome.describe()
