"""Work spread over forked processes: `forked_map(work, count, jobs)` runs `work(0)` …
`work(count - 1)` on `jobs` processes and yields each answer as it comes.

The processes are forked once `work` and what it reads exist, so they inherit both: no
function, rule set or plan is sent to them, only the number of a task; the answers come back
through the pool's pipe, so they are plain data (text, numbers) made by our own code. A worker's
exception is raised again in the caller. The caller puts the answers in order: nothing depends
on which worker finished first.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TypeVar

Answer = TypeVar("Answer")

_inherited: list[Callable[[int], object]] = []
"""The work a forked worker was started for: set in the parent just before the fork and read
in the worker (its own copy); cleared in the parent once the workers exist."""


def forked_map(
    work: Callable[[int], Answer], count: int, jobs: int
) -> Iterator[tuple[int, Answer]]:
    """(index, work(index)) for every index below `count`, computed on up to `jobs` forked
    processes, in the order they finish."""
    _inherited[:] = [work]
    try:
        with ProcessPoolExecutor(
            max_workers=max(1, min(jobs, count)),
            mp_context=multiprocessing.get_context("fork"),
        ) as pool:
            futures = {pool.submit(_run, index): index for index in range(count)}
            _inherited.clear()
            for future in as_completed(futures):
                yield futures[future], future.result()  # type: ignore[misc]
    finally:
        _inherited.clear()


def _run(index: int) -> object:
    return _inherited[0](index)


def usable_cores() -> int:
    """The cores this process may run on (its affinity, which a container or taskset narrows):
    the default number of workers of the commands that spread their work."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # no affinity on this platform
        return max(os.cpu_count() or 1, 1)
