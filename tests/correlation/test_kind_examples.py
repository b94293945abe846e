"""docs/incident-kinds.md shows, for each kind, a collection of this repository whose first
incident is of that kind, and the first lines `npuwatch scan` prints for it. The examples are
rendered here from the collections (NPUWATCH_UPDATE_DOCS=1 rewrites them): they stay true."""

from __future__ import annotations

import os
from datetime import timezone
from functools import cache

from npuwatch.correlation.incident import Incident
from npuwatch.correlation.kinds import KINDS
from npuwatch.correlation.report_text import render_incidents
from npuwatch.scan.tree import scan_tree
from npuwatch.terminal import Palette
from tests.conftest import FIXTURES, REPO, utc_clock

DOC = REPO / "docs" / "incident-kinds.md"
BEGIN = "<!-- examples: begin (tests/correlation/test_kind_examples.py) -->"
END = "<!-- examples: end -->"
SHOWN = ("Incident 1", "  root cause", "  why", "  check first")


@cache
def first_incidents() -> dict[str, tuple[str, Incident]]:
    """Each kind's collection named after it, else its first collection (in name order),
    whose first incident is of that kind."""
    found: dict[str, tuple[str, Incident]] = {}
    for parent in ("collective", "init-link"):
        for case in sorted((FIXTURES / parent).iterdir()):
            if case.is_dir():
                incidents = scan_tree(case, utc_clock()).incidents
                if not incidents:
                    continue
                kind = incidents[0].kind
                if kind not in found or case.name == kind.replace("_", "-"):
                    found[kind] = (f"fixtures/{parent}/{case.name}", incidents[0])
    return found


def shown(lines: list[str]) -> list[str]:
    """The heading, root cause, why and check first, each with its wrapped lines."""
    kept: list[str] = []
    keeping = False
    for line in lines:
        if not line.startswith("              "):  # a field of its own, or the heading
            keeping = line.startswith(SHOWN)
        if keeping:
            kept.append(line)
    return kept


def rendered() -> str:
    missing = [f"`{name}`" for name in KINDS if name not in first_incidents()]
    parts = [
        BEGIN,
        "",
        (
            "Kinds without a collection here yet: " + ", ".join(missing) + "."
            if missing
            else f"Each of the {len(KINDS)} kinds, with the collection that shows it:"
        ),
    ]
    for name, (case, incident) in sorted(
        first_incidents().items(), key=lambda item: list(KINDS).index(item[0])
    ):
        kept = shown(render_incidents([incident], timezone.utc, Palette(False)))
        parts += ["", f"### `{name}`", "", f"`npuwatch scan {case}`:", "", "```", *kept, "```"]
    parts += ["", END]
    return "\n".join(parts)


def test_the_documented_examples_are_what_scan_prints_for_them() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    if os.environ.get("NPUWATCH_UPDATE_DOCS"):
        DOC.write_text(text[:start] + rendered() + text[end:], encoding="utf-8")
        text = DOC.read_text(encoding="utf-8")
        start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == rendered()


def test_every_kind_has_a_collection_whose_first_incident_is_of_that_kind() -> None:
    assert [name for name in KINDS if name not in first_incidents()] == []
