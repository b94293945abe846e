"""Every ```console example of the documentation is what the command prints today.

A block holds `$ COMMAND` lines (`# exit 2` after one that exits 2 on purpose), each followed by its
output as an excerpt: a line `…` stands for
any number of lines left out, a line ending in ` …` for a line that starts with what comes before
the mark (tests/scan/test_readme.py). The command runs from the repository, in UTC,
without colour, on the bundled fixtures the example names.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.npuwatch_command import run_npuwatch
from tests.scan.test_readme import departure

PAGES = sorted((REPO / "docs").rglob("*.md"))


def examples() -> list[tuple[Path, int, str, list[str]]]:
    """(page, line, command, expected output) of every `$ npuwatch …` in a console block."""
    found: list[tuple[Path, int, str, list[str]]] = []
    for page in PAGES:
        lines = page.read_text("utf-8").splitlines()
        inside = False
        for number, line in enumerate(lines, 1):
            if line.startswith("```"):
                inside = not inside and line[3:].strip() == "console"
                continue
            if inside and line.startswith("$ "):
                output: list[str] = []
                for following in lines[number:]:
                    if following.startswith(("$ ", "```")):
                        break
                    output.append(following)
                found.append((page, number, line[2:], output))
    return found


EXAMPLES = examples()


def test_the_documentation_has_console_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize(
    ("page", "line", "command", "output"),
    EXAMPLES,
    ids=[f"{page.relative_to(REPO)}:{line}" for page, line, _, _ in EXAMPLES],
)
def test_the_example_is_what_the_command_prints(
    page: Path, line: int, command: str, output: list[str]
) -> None:
    words = shlex.split(command, comments=True)
    assert words[0] == "npuwatch", f"{page.name}:{line}: a console example runs npuwatch"
    result = run_npuwatch(
        *words[1:], cwd=REPO, env={**os.environ, "TZ": "UTC", "NO_COLOR": "1", "COLUMNS": "100"}
    )
    # (an example that exits 2 on purpose says so: `# exit 2` after the command)
    stated = re.search(r"#.*\bexit ([0-9])", command)
    if stated is not None:
        assert result.returncode == int(stated[1]), result.stderr
    else:
        assert result.returncode in (0, 1), result.stderr
    problem = departure(output, result.stdout.splitlines())
    assert problem is None, f"{page.relative_to(REPO)}:{line}: {problem}"
