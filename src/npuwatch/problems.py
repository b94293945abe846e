"""What stops a command before it can do its work: every problem, said once.

A configuration with wrong values, a rule file that does not load, a secret file nobody may
read: each is one line that says where and why, and all of them are gathered before anything
is reported, so that an operator fixes them in one go. `cli.main` prints them, each after
`npuwatch: `, and leaves with the usage/input exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

EXIT_USAGE = 2


class Problems(Exception):
    """Every problem found (one line each), and optional advice printed after them."""

    exit_code = EXIT_USAGE
    problems: Sequence[object]

    def __init__(self, problems: Iterable[object], advice: str | None = None) -> None:
        self.problems = list(problems)
        self.advice = advice
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """What to print, one line each: the problems, then the advice."""
        lines = [str(problem) for problem in self.problems]
        return [*lines, self.advice] if self.advice else lines
