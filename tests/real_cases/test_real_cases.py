"""The real HCCL multi-rank failures of ../shared/real-logs/hccl, scanned as an operator would.

Why: every other correlation test reads logs written for it. These were printed by HCCL, or cut
by the authors of Ascend's own diagnosis tools, and some come with a verdict stated by their
source (SOURCES.md there). Every case folder must scan cleanly. Where the source states a
verdict, expected/<folder>.json holds it, written from that statement and from the logs, never
from npuwatch's output, and the first incident of the scan (the verdict) must match it.
The logs are read from their folder, never copied here; the tests skip when it is absent.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from npuwatch.correlation.kinds import KINDS as NPUWATCH_KINDS
from tests.conftest import REAL_LOGS
from tests.npuwatch_command import clean_environment, run_npuwatch

pytestmark = pytest.mark.realdata

CASES = REAL_LOGS / "hccl"
EXPECTED = Path(__file__).parent / "expected"
ABSENT = "../shared/real-logs/hccl is not present on this machine"

NOT_DECIDED_YET: dict[str, str] = {}
"""Case folder → why npuwatch does not reach its source's verdict yet. Such a case must fail
(strict xfail): one that starts passing is taken out of this dict."""

# fmt: off
FIELDS = {
    "statement", "reasoning", "kind", "kind_any_of", "communicator", "root_cause", "waiting_chain",
}
# fmt: on
KINDS = set(NPUWATCH_KINDS)


def case_folders() -> list[Any]:
    if not CASES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=ABSENT))]
    return sorted(path.name for path in CASES.iterdir() if path.is_dir())


def cases_with_a_verdict() -> list[Any]:
    return [
        pytest.param(
            path.stem,
            marks=[pytest.mark.xfail(strict=True, reason=NOT_DECIDED_YET[path.stem])]
            if path.stem in NOT_DECIDED_YET
            else [],
        )
        for path in sorted(EXPECTED.glob("*.json"))
    ]


@functools.cache
def scan(folder: Path) -> subprocess.CompletedProcess[str]:
    """`npuwatch scan FOLDER --json`, once per folder for the whole module."""
    cache = os.environ.get("NPUWATCH_CACHE", "")
    return run_npuwatch(
        "scan", str(folder), "--json", env=clean_environment(TZ="UTC", NPUWATCH_CACHE=cache)
    )


def complaints(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What is wrong with a scan that should have read every file. Scan writes on stderr only
    what it could not read or follow ('npuwatch: skipping …: a link, not followed',
    'npuwatch: cannot read …', one line each, also listed in the JSON's `problems`, exit 2) or
    a crash (a traceback), so every stderr line is a complaint."""
    wrong = [f"stderr: {line}" for line in result.stderr.splitlines()]
    if result.returncode not in (0, 1):
        wrong.append(f"exit code {result.returncode} (0 or 1 expected)")
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        return [*wrong, f"stdout is not JSON: {error}"]
    return wrong + [f"problem: {problem}" for problem in report["problems"]]


def fits(expected: dict[str, Any], place: dict[str, Any]) -> bool:
    return all(place.get(key) == value for key, value in expected.items())


def fit_as_set(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> bool:
    """Same number of places, each expected place fitting a distinct actual one."""
    taken: dict[int, int] = {}  # actual place → the expected place it fits

    def assign(wanted: int, tried: set[int]) -> bool:
        for index, place in enumerate(actual):
            if index not in tried and fits(expected[wanted], place):
                tried.add(index)
                if index not in taken or assign(taken[index], tried):
                    taken[index] = wanted
                    return True
        return False

    return len(expected) == len(actual) and all(assign(i, set()) for i in range(len(expected)))


def differences(expected: dict[str, Any], incident: dict[str, Any]) -> list[str]:
    kinds = expected.get("kind_any_of") or [expected["kind"]]
    wrong = [] if incident["kind"] in kinds else [f"kind is not {' or '.join(kinds)}"]
    if "communicator" in expected and incident["communicator"] != expected["communicator"]:
        wrong.append("communicator differs")
    if "root_cause" in expected and not fit_as_set(expected["root_cause"], incident["root_cause"]):
        wrong.append("root cause differs")
    chain, actual_chain = expected.get("waiting_chain"), incident["waiting_chain"]
    if chain is not None and (
        len(chain) != len(actual_chain) or not all(map(fits, chain, actual_chain))
    ):
        wrong.append("waiting chain differs")
    return wrong


def summary(incident: dict[str, Any]) -> str:
    def places(key: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in place.items() if v is not None} for place in incident[key]]

    shown = {key: incident[key] for key in ("kind", "summary", "communicator")}
    shown |= {key: places(key) for key in ("root_cause", "waiting_chain")}
    return json.dumps(shown, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("name", case_folders())
def test_every_case_folder_scans_without_a_complaint_about_its_input(name: str) -> None:
    assert complaints(scan(CASES / name)) == []


@pytest.mark.parametrize("name", cases_with_a_verdict())
def test_the_first_incident_is_the_verdict_the_source_states(name: str) -> None:
    if not (CASES / name).is_dir():
        pytest.skip(ABSENT if not CASES.is_dir() else f"no case folder {name} in {CASES}")
    expected = json.loads((EXPECTED / f"{name}.json").read_text(encoding="utf-8"))
    incidents = json.loads(scan(CASES / name).stdout)["incidents"]
    actual = summary(incidents[0]) if incidents else "no incident"
    wrong = differences(expected, incidents[0]) if incidents else ["no incident"]
    shown = {k: v for k, v in expected.items() if k != "reasoning"}
    assert not wrong, (
        f"{'; '.join(wrong)}\nexpected: {json.dumps(shown, ensure_ascii=False, indent=1)}"
        f"\nincidents[0]: {actual}"
    )


def test_every_expected_verdict_is_well_formed_and_names_a_case() -> None:
    folders = set(case_folders()) if CASES.is_dir() else None
    wrong = []
    for path in sorted(EXPECTED.glob("*.json")):
        expected = json.loads(path.read_text(encoding="utf-8"))
        kinds = expected.get("kind_any_of") or [expected.get("kind")]
        if set(expected) - FIELDS or not expected.get("statement") or not expected.get("reasoning"):
            wrong.append(f"{path.name}: fields {sorted(expected)}")
        if ("kind" in expected) == ("kind_any_of" in expected) or not set(kinds) <= KINDS:
            wrong.append(f"{path.name}: kinds {kinds} (one of kind, kind_any_of; known kinds)")
        if folders is not None and path.stem not in folders:
            wrong.append(f"{path.name}: no case folder {path.stem}")
    expected_names = {path.stem for path in EXPECTED.glob("*.json")}
    wrong += [
        f"NOT_DECIDED_YET: no expected/{name}.json"
        for name in NOT_DECIDED_YET.keys() - expected_names
    ]
    assert wrong == []


def test_a_file_scan_does_not_read_makes_the_case_fail(tmp_path: Path) -> None:
    """The rule of the first test is not vacuous: a link in the tree is a complaint."""
    plog = tmp_path / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-1_1.log").write_text("[ERROR] HCCL(1,python):2025-03-19-04:15:31.878.645 x\n")
    (plog / "plog-2_1.log").symlink_to(plog / "plog-1_1.log")
    wrong = complaints(scan(tmp_path))
    assert any(line.startswith("stderr: npuwatch: skipping") for line in wrong), wrong
    assert "exit code 2 (0 or 1 expected)" in wrong
