"""Every collection under fixtures/init-link gives the verdict its expected.json states.

The collections are written by fixtures/make_init_link_trees.py, one per decision path of
communicator init, link setup, the execution refinements and the cluster's settings
(formats/hccl-init-and-link.md §2), the identity rule and the lessons of CORRELATION.md §5. Each
folder's EXPECTED.md says what a correct engine concludes and why; its expected.json holds the
same verdict in the format of tests/real_cases/expected/ (kind or kind_any_of, communicator,
root cause as a set of places matched on the keys given, waiting chain in order), written from
the design and never from npuwatch's output. The first incident of a scan is the verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from npuwatch.correlation.kinds import KINDS
from npuwatch.scan.tree import scan_tree
from tests.conftest import FIXTURES, utc_clock
from tests.real_cases.test_real_cases import FIELDS, differences, summary

COLLECTIONS = FIXTURES / "init-link"
SCRIPT = FIXTURES / "make_init_link_trees.py"
CASES = sorted(path.name for path in COLLECTIONS.iterdir() if path.is_dir())

NOT_DECIDED_YET: dict[str, str] = {}
"""Case folder → what npuwatch gives instead of the expected verdict, today. Such a case must
fail (strict xfail): one that starts passing is taken out of this dict."""

ONE_INCIDENT = {
    "link-old-table-mutual": "a mutual wait is one incident (CORRELATION.md §5.12)",
    "lesson-long-gap-chain": "a waiting chain over a long gap is one fault (§5.7)",
    "lesson-misstamped": "a record stamped before its process's init opens no incident (§5.7)",
    "lesson-clock-skew": "a skew correction never splits a burst tight on the raw clocks (§5.8)",
}
"""Cases whose EXPECTED.md says the scan gives exactly one incident."""


NAMES_NOBODY = {"exec_timeout_unlocated", "transport_init_unlocated", "weak_timeout_unlocated"}
"""Kinds whose verdict names nobody: their expected root cause is empty, and only theirs."""


@cache
def incidents_of(case: str) -> list[dict[str, Any]]:
    return [incident.to_dict() for incident in scan_tree(COLLECTIONS / case, utc_clock()).incidents]


def expected_of(case: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((COLLECTIONS / case / "expected.json").read_text("utf-8"))
    return found


def with_marks(case: str) -> Any:
    if case in NOT_DECIDED_YET:
        return pytest.param(
            case, marks=pytest.mark.xfail(strict=True, reason=NOT_DECIDED_YET[case])
        )
    return case


@pytest.mark.parametrize("case", [with_marks(case) for case in CASES])
def test_the_first_incident_is_the_expected_verdict(case: str) -> None:
    expected = expected_of(case)
    incidents = incidents_of(case)
    wrong = differences(expected, incidents[0]) if incidents else ["no incident"]
    if case in ONE_INCIDENT and len(incidents) != 1:
        wrong.append(f"{len(incidents)} incidents, not one: {ONE_INCIDENT[case]}")
    shown = {k: v for k, v in expected.items() if k not in ("statement", "reasoning")}
    actual = summary(incidents[0]) if incidents else "no incident"
    assert not wrong, (
        f"{'; '.join(wrong)}\nexpected: {json.dumps(shown, ensure_ascii=False, indent=1)}"
        f"\nincidents[0]: {actual}"
    )


def test_every_expected_verdict_is_well_formed() -> None:
    wrong = []
    for case in CASES:
        expected = expected_of(case)
        kinds = expected.get("kind_any_of") or [expected.get("kind")]
        names_nobody = set(kinds) <= NAMES_NOBODY
        if (
            set(expected) - FIELDS
            or not expected.get("statement")
            or not isinstance(expected.get("root_cause"), list)
            or (expected["root_cause"] == []) != names_nobody
        ):
            wrong.append(f"{case}: fields {sorted(expected)}")
        if ("kind" in expected) == ("kind_any_of" in expected) or not set(kinds) <= set(KINDS):
            wrong.append(f"{case}: kinds {kinds} (one of kind, kind_any_of; known kinds)")
        if not (COLLECTIONS / case / "EXPECTED.md").is_file():
            wrong.append(f"{case}: no EXPECTED.md")
    wrong += [f"NOT_DECIDED_YET: no case {case}" for case in NOT_DECIDED_YET if case not in CASES]
    wrong += [f"ONE_INCIDENT: no case {case}" for case in ONE_INCIDENT if case not in CASES]
    assert wrong == []


def test_the_script_rewrites_the_committed_collections_identically(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    written = {path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file()}
    committed = {path.relative_to(COLLECTIONS) for path in COLLECTIONS.rglob("*") if path.is_file()}
    assert sorted(map(str, written ^ committed)) == []
    differing = [
        str(path)
        for path in sorted(written)
        if (tmp_path / path).read_bytes() != (COLLECTIONS / path).read_bytes()
    ]
    assert differing == []
