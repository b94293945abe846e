"""Runs the real `npuwatch agent` with one fault injected, for process-level tests.

    python tests/agent/faulty_agent.py FAULT agent --root ... --state-directory ...

FAULT is `none`, `slow-commit` (every journal commit takes a second: a drain that outlasts a
second SIGTERM), `dead-rules` (the rules thread dies on a line containing "KILL-RULES"),
`sleeping-readers` (the child that reads a profiling run or a debugging-tool output is the
program $FAULTY_CHILD instead of Python, which the test makes sleep) or `hung-close` (closing
the journal at the end of the stop never returns).
The fault is patched in here, by the test, so the agent itself carries no test hooks.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from typing import Any

from npuwatch.agent import child_reader
from npuwatch.agent.rules_stage import RulesStage
from npuwatch.cli import main
from npuwatch.journal.store import Journal


def _inject(fault: str) -> None:
    if fault == "slow-commit":
        original_commit = Journal.commit

        def slow_commit(self: Journal, batch: Any) -> None:
            time.sleep(1.0)
            original_commit(self, batch)

        Journal.commit = slow_commit  # type: ignore[method-assign]
    elif fault == "dead-rules":
        original_process = RulesStage._process

        def dying_process(self: RulesStage, batch: Any) -> None:
            if any("KILL-RULES" in record.original for record in batch.records):
                raise RuntimeError("injected fault: the rules thread dies")
            original_process(self, batch)

        RulesStage._process = dying_process  # type: ignore[method-assign]
    elif fault == "sleeping-readers":
        child_reader.sys = types.SimpleNamespace(executable=os.environ["FAULTY_CHILD"])  # type: ignore[assignment]
    elif fault == "hung-close":

        def hung_close(self: Journal) -> None:
            threading.Event().wait()

        Journal.close = hung_close  # type: ignore[method-assign]
    elif fault != "none":
        raise SystemExit(f"unknown fault {fault}")


if __name__ == "__main__":
    _inject(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
