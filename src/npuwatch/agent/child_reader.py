"""Reading something big in a child interpreter, for the importers that must not load pandas.

The profiling and debugging-tools importers each run `python -I -m <their digest module> ARGS`,
which prints one JSON document and exits, giving its memory back to the host; this is the
parent's side of it, the same for both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

from npuwatch.child_process import run_child


class DigestFailed(Exception):
    """The child could not read its input; the message says why, in one line."""


def read_in_child(
    module: str, arguments: list[str], timeout_s: float, stop: threading.Event | None = None
) -> Any:
    """The JSON document `python -m module ARGUMENTS` printed (DigestFailed with the child's
    last error line, or the time it overran, when it did not; ChildStopped, the child killed,
    once `stop` is set)."""
    try:
        done = run_child(
            # -I: the child imports npuwatch as installed, never a ./npuwatch/ of the folder
            # the agent runs in nor one that PYTHONPATH names, and reads no user site folder;
            # the folder it starts in is fixed for the same reason.
            [sys.executable, "-I", "-m", module, *arguments],
            timeout_s,
            stop,
            cwd="/",
        )
    except subprocess.TimeoutExpired as error:
        raise DigestFailed(f"reading it took longer than {timeout_s:g} s") from error
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise DigestFailed(lines[-1] if lines else f"exit status {done.returncode}")
    return json.loads(done.stdout)
