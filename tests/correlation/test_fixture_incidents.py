"""Every collective-failure collection under fixtures/collective gives its expected incidents.

The collections are written by fixtures/make_collective_trees.py, one per decision path (each
folder's EXPECTED.md says what a correct engine concludes and why); the golden files hold the
whole incident list of `npuwatch scan --json`. After an intended change of output, rewrite them
with NPUWATCH_UPDATE_GOLDEN=1 and review the diff against EXPECTED.md.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.kinds import KINDS
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.stream import StreamParser
from npuwatch.scan.tree import scan_tree
from tests.conftest import FIXTURES, TREES, utc_clock
from tests.golden_files import golden_text

COLLECTIONS = FIXTURES / "collective"
CASES = sorted(path for path in COLLECTIONS.iterdir() if path.is_dir())
GOLDEN = Path(__file__).resolve().parent / "golden"


def incidents_of(root: Path) -> list[dict[str, Any]]:
    found = [incident.to_dict() for incident in scan_tree(root, utc_clock()).incidents]
    for incident in found:  # paths relative to the collection, the same on every machine
        for item in incident["evidence"]:
            item["file"] = os.path.relpath(item["file"], root)
    return found


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_collection_gives_its_expected_incidents(case: Path) -> None:
    found = incidents_of(case)
    text = json.dumps(found, ensure_ascii=False, indent=2) + "\n"
    assert found == json.loads(golden_text(GOLDEN / f"{case.name}.json", text))


def expected_verdicts(notes: str) -> tuple[set[str], set[int]]:
    """The kinds and FaultDiag codes the `- Expected …` line of a collection's notes names (only
    that line: a code's digits elsewhere, in an address or a pid, are not an expectation)."""
    (line,) = [line for line in notes.splitlines() if line.startswith("- Expected ")]
    said = line.split(":", 1)[1]
    kinds = set(re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", said)) & set(KINDS)
    codes = {int(code) for code in re.findall(r"\b(1[0-3][0-9])\b", said)}
    return kinds, codes


def meets(found: dict[str, Any], notes: str) -> bool:
    kinds, codes = expected_verdicts(notes)
    return found["kind"] in kinds or found["faultdiag_code"] in codes


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_kind_of_each_collection_is_the_one_its_notes_expect(case: Path) -> None:
    notes = (case / "EXPECTED.md").read_text("utf-8")
    found = incidents_of(case)
    assert found, f"{case.name}: no incident"
    assert meets(found[0], notes), (found[0]["kind"], found[0]["faultdiag_code"])


def test_the_notes_check_fails_on_a_wrong_code_whose_digits_appear_elsewhere() -> None:
    """Before, `str(code) in EXPECTED.md` passed a wrong code when its digits were anywhere in
    the file (an address, a pid)."""
    notes = (
        "# x\n- Scenario: rank 6 at 10.0.0.113, pid 2667125\n"
        "- Expected FaultDiag code: 116 (CQE_ERROR)\n- Root cause: rank 6\n"
    )
    assert meets({"kind": "cqe_error", "faultdiag_code": 116}, notes)
    assert not meets({"kind": "first_error_not_timeout", "faultdiag_code": 113}, notes)
    assert not meets({"kind": "timeout", "faultdiag_code": 125}, notes)
    kinds_line = "# y\n- Expected kind: init_nic_mismatch (FaultDiag: none)\n"
    assert meets({"kind": "init_nic_mismatch", "faultdiag_code": None}, kinds_line)
    assert not meets({"kind": "init_root_exited", "faultdiag_code": None}, kinds_line)


def test_every_decision_path_has_a_collection() -> None:
    codes = {incident["faultdiag_code"] for case in CASES for incident in incidents_of(case)}
    assert {108, 109, 110, 112, 113, 116, 118, 121, 122, 123, 124, 125, 126, 132} <= codes


def test_the_bundled_hccl_timeout_names_rank_6_on_host_b_and_seven_victims() -> None:
    (incident,) = incidents_of(TREES / "hccl-timeout")
    assert incident["faultdiag_code"] == 116
    assert [(p["host"], p["device"], p["rank"]) for p in incident["root_cause"]] == [
        ("host-b", 2, 6)
    ]
    victims = sorted((p["host"], p["rank"]) for p in incident["victims"])
    assert victims == [("host-a", r) for r in range(4)] + [("host-b", r) for r in (4, 5, 7)]
    assert incident["waiting_chain"][-1]["rank"] == 6


@pytest.mark.parametrize("case", ["restart-in-pid", "socket-chain", "clock-skew"])
def test_the_incidents_do_not_depend_on_the_order_the_files_are_read_in(case: str) -> None:
    root = COLLECTIONS / case
    files = sorted(root.rglob("*.log"))

    def correlate(paths: list[Path]) -> list[dict[str, Any]]:
        extractor = CollectiveExtractor()
        correlator = Correlator()
        for path in paths:
            parser = StreamParser(utc_clock(), path=str(path), host=path.relative_to(root).parts[0])
            records = parser.feed(path.read_bytes()) + parser.flush()
            correlator.add_all(extractor.feed(records, 1))
        correlator.add_all(extractor.finish())
        found = [incident.to_dict() for incident in correlator.incidents()]
        for incident in found:
            incident["evidence"] = sorted(incident["evidence"], key=json.dumps)
        return found

    forwards = correlate(files)
    assert forwards
    assert correlate(list(reversed(files))) == forwards
    assert correlate(sorted(files, key=lambda p: p.name)) == forwards
