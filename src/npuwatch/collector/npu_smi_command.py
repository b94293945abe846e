"""Running `npu-smi info` and telling apart its three ways to fail.

npu-smi is the only view of the device the host has without the driver's C API. It can be
absent (a CPU-only host, a container without the driver mounted), it can fail (driver not
loaded, `dcmi` errors, a hung device making it slow), or it can answer. The agent disables
polling for the first, counts and reports the second, and parses the third.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Sequence

from npuwatch.child_process import run_child

DEFAULT_COMMAND = ("npu-smi", "info")
"""What the agent and `doctor` run unless told otherwise."""

_STDERR_CHARS = 300


class NpuSmiUnavailable(Exception):
    """The command is not installed on this host (no driver, or not on PATH)."""


class NpuSmiFailed(Exception):
    """The command ran but gave no usable answer: a non-zero exit, a timeout, no output."""


def find_executable(command: Sequence[str], path: str | None = None) -> str | None:
    """The full path of the command's program, or None when it is not installed."""
    program = command[0]
    if os.sep in program:
        return os.path.abspath(program) if os.access(program, os.X_OK) else None  # noqa: PTH100
    found = shutil.which(program, path=path)
    return None if found is None else os.path.abspath(found)  # noqa: PTH100 - run from /


def run_npu_smi(
    command: Sequence[str] = DEFAULT_COMMAND,
    timeout_s: float = 10.0,
    env: dict[str, str] | None = None,
    stop: threading.Event | None = None,
) -> str:
    """The standard output of one run of `command`.

    Raises NpuSmiUnavailable when the program does not exist and NpuSmiFailed when it runs
    without answering; the message of either is one line an operator can act on. Once `stop`
    is set, the command is killed (ChildStopped).
    """
    program = find_executable(command, path=None if env is None else env.get("PATH"))
    if program is None:
        raise NpuSmiUnavailable(
            f"{command[0]} not found (no Ascend driver on this host, or not on PATH)"
        )
    try:
        # From /: the folder the agent was started in is nothing the command should read.
        done = run_child([program, *command[1:]], timeout_s, stop, env=env, cwd="/")
    except subprocess.TimeoutExpired as error:
        raise NpuSmiFailed(
            f"{shlex.join(command)} did not answer within {timeout_s:g} s "
            "(a hung device or driver; check dmesg)"
        ) from error
    except OSError as error:
        raise NpuSmiFailed(f"cannot run {shlex.join(command)}: {error.strerror}") from error
    stdout = done.stdout.decode("utf-8", errors="replace")
    if done.returncode != 0:
        detail = _one_line(done.stderr.decode("utf-8", errors="replace") or stdout)
        raise NpuSmiFailed(
            f"{shlex.join(command)} exited with status {done.returncode}"
            + (f": {detail}" if detail else "")
        )
    if not stdout.strip():
        raise NpuSmiFailed(f"{shlex.join(command)} printed nothing")
    return stdout


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _STDERR_CHARS else line[: _STDERR_CHARS - 1] + "…"
