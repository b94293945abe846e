"""The `scan` samples of the README and of the scan guide (docs/guides/scan.md) are what
`npuwatch scan` of the bundled fixtures prints today.

The sample is abridged by two marks only: a line `…` stands for any number of lines left out, and
a line ending in ` …` for a line of the output that starts with what comes before the mark.
Every other line is the output's next line, exactly.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.npuwatch_command import run_npuwatch

README = REPO / "README.md"
GUIDE = REPO / "docs" / "guides" / "scan.md"
TITLE = "`npuwatch scan`: what went wrong in this log tree"
SAMPLES = {README: f"## {TITLE}", GUIDE: f"# {TITLE}"}
"""Each page with the sample, and the heading it is under."""
COMMAND = ["scan", "fixtures/trees/hccl-timeout"]
GAP = "…"
CUT = " …"


def readme_sample(page: Path = README) -> list[str]:
    """The first fenced block without a language in the page's scan section."""
    lines = page.read_text(encoding="utf-8").splitlines()
    section = SAMPLES[page]
    block: list[str] | None = None
    language = ""
    for line in lines[lines.index(section) + 1 :]:
        if block is None and line.startswith("## "):
            break
        if line.startswith("```"):
            if block is None:
                block, language = [], line[3:].strip()
                continue
            if not language:
                return block
            block = None
            continue
        if block is not None:
            block.append(line)
    raise AssertionError(f"{page.name} has no sample output under {section!r}")


def fits(expected: str, actual: str) -> bool:
    if expected.endswith(CUT):
        head = expected[: -len(CUT)]
        return actual.startswith(head) and len(actual) > len(head)
    return expected == actual.rstrip()


def departure(sample: list[str], output: list[str]) -> str | None:
    """Where the sample departs from the output, or None when it is a faithful excerpt."""
    position = 0
    skipping = False
    for number, expected in enumerate(sample, start=1):
        if expected.strip() == GAP:
            skipping = True
            continue
        while position < len(output) and not fits(expected, output[position]):
            if not skipping:
                return f"sample line {number} is {expected!r}, the output has {output[position]!r}"
            position += 1
        if position == len(output):
            return f"sample line {number} is not in the output (in this order): {expected!r}"
        position += 1
        skipping = False
    return None


def run_scan() -> subprocess.CompletedProcess[str]:
    """The command as the README gives it, from the checkout, as a user runs it."""
    return run_npuwatch(*COMMAND, cwd=REPO, env={**os.environ, "TZ": "UTC", "NO_COLOR": "1"})


@pytest.mark.parametrize("page", sorted(SAMPLES), ids=lambda page: page.name)
def test_the_scan_sample_is_what_the_command_prints(page: Path) -> None:
    result = run_scan()
    assert result.returncode == 1, result.stderr  # error records found
    sample = readme_sample(page)
    assert len([line for line in sample if line.strip() != GAP]) >= 20
    problem = departure(sample, result.stdout.splitlines())
    assert problem is None, f"{page.relative_to(REPO)} › npuwatch scan: {problem}"


def test_the_comparison_catches_a_changed_count_and_lines_out_of_order() -> None:
    output = ["a", "  b — 21× from x", "c", "d"]
    assert departure(["a", "  b — 21× …", "…", "d"], output) is None
    assert departure(["a", "  b — 14× …"], output) is not None
    assert departure(["a", "c"], output) is not None  # a gap must be marked
    assert departure(["…", "d", "c"], output) is not None
    assert departure(["a", "…", "e"], output) is not None


INCIDENT_EXAMPLE = "A worked example: `fixtures/collective/first-error-not-timeout`"


def test_the_guide_incident_example_is_what_the_command_prints() -> None:
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(INCIDENT_EXAMPLE))
    opening = next(i for i in range(start, len(lines)) if lines[i] == "```")
    closing = lines.index("```", opening + 1)
    sample = lines[opening + 1 : closing]
    assert sample[0].startswith("Incident 1: first error not timeout")
    result = run_npuwatch(
        "scan",
        "fixtures/collective/first-error-not-timeout",
        "--no-rules",
        cwd=REPO,
        env={**os.environ, "TZ": "UTC", "NO_COLOR": "1"},
    )
    assert result.returncode == 1, result.stderr
    problem = departure([GAP, *sample], result.stdout.splitlines())  # an excerpt from the middle
    assert problem is None, f"docs/guides/scan.md › Which device failed first: {problem}"
