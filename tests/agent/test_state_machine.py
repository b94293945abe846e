"""A model-based test: Hypothesis interleaves writes, rotations, truncations, deletions,
restarts and crashes, and the journal must hold exactly the lines written, each once.

The model is the multiset of lines written. A file is deleted or truncated only after the agent
has journaled all of it (CANN deletes its oldest files, long read; deleting unread data is a loss
the agent can only count, and other tests check that count).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from tests.agent.harness import Harness, append, plog_line, plog_path


class AgentMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="npuwatch-machine-"))
        # Two descriptors for up to a handful of files: rotation and writes also close and
        # reopen files by identity.
        self.harness = Harness(self.tmp, max_open_files=2)
        self.expected: Counter[str] = Counter()
        self.files: list[Path] = []
        self.number = 0
        self.running = False

    @initialize()
    def start(self) -> None:
        self.files.append(plog_path(self.harness.logs, 10, stamp=0))
        self.harness.start()
        self.running = True

    def _lines(self, count: int) -> list[str]:
        lines = [plog_line(10, self.number + index) for index in range(count)]
        self.number += count
        return lines

    @rule(count=st.integers(1, 3000), which=st.integers(0, 3))
    def write(self, count: int, which: int) -> None:
        path = self.files[which % len(self.files)]
        lines = self._lines(count)
        append(path, lines)
        self.expected.update(lines)

    @rule()
    def rotate(self) -> None:
        """CANN's rotation: the writer goes on in a new file."""
        self.files.append(plog_path(self.harness.logs, 10, stamp=len(self.files) + 1))

    @precondition(lambda self: len(self.files) > 1 and self.running)
    @rule()
    def delete_oldest(self) -> None:
        self.harness.wait_for_lines(self.expected)
        self.files.pop(0).unlink(missing_ok=True)

    @precondition(lambda self: self.running)
    @rule(count=st.integers(1, 500))
    def truncate_and_rewrite(self, count: int) -> None:
        self.harness.wait_for_lines(self.expected)
        lines = self._lines(count)
        path = self.files[-1]
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        self.expected.update(lines)

    @precondition(lambda self: self.running)
    @rule()
    def restart(self) -> None:
        self.harness.stop()
        self.harness.start()

    @precondition(lambda self: self.running)
    @rule()
    def crash(self) -> None:
        self.harness.crash()
        self.harness.start()

    def teardown(self) -> None:
        try:
            if self.running:
                got = self.harness.wait_for_lines(self.expected)
                self.harness.stop()
                assert got == self.expected, (
                    f"lost: {sum((self.expected - got).values())}, "
                    f"repeated: {sum((got - self.expected).values())}"
                )
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


AgentMachine.TestCase.settings = settings(
    max_examples=6, stateful_step_count=10, deadline=None, derandomize=True
)
test_the_journal_holds_exactly_what_was_written = AgentMachine.TestCase
