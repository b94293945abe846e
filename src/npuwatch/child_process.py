"""Running a child process that the agent's stop ends: `subprocess.run` with a stop event.

The agent runs children from threads of its own (npu-smi, the readers of profiling runs and
debugging-tool outputs), with timeouts of seconds to ten minutes. On SIGTERM it does not wait
for them; but a child left running outlives the agent (an npu-smi hung on a device, a reader of
a big run holding gigabytes), and its thread can still act on an answer that comes during the
stop. So the wait is cut into short slices, and a set stop event kills the child.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

_SLICE_S = 0.2
"""How often a waiting thread looks at the stop event (a stop is seen within this)."""


class ChildStopped(Exception):
    """The stop event was set while the child ran: it was killed, and its answer is unknown."""


def run_child(
    command: Sequence[str],
    timeout_s: float,
    stop: threading.Event | None = None,
    **options: Any,
) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run(command, capture_output=True, timeout=timeout_s, **options)`, and
    ChildStopped (the child killed) as soon as `stop` is set."""
    deadline = time.monotonic() + timeout_s
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options
    ) as process:
        while True:
            left = deadline - time.monotonic()
            try:
                # Retrying communicate() after its timeout loses no output (its documentation).
                out, err = process.communicate(timeout=max(min(left, _SLICE_S), 0.0))
                break
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    _end(process)
                    raise ChildStopped(f"{command[0]} was stopped with the agent") from None
                if time.monotonic() >= deadline:
                    _end(process)
                    raise subprocess.TimeoutExpired(list(command), timeout_s) from None
    return subprocess.CompletedProcess(list(command), process.returncode, out, err)


def _end(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.communicate()
