"""The kinds of incident: named for what failed, with FaultDiag's code only where FaultDiag has
the same decision, and documented in docs/incident-kinds.md row for row."""

from __future__ import annotations

import re

from npuwatch.correlation.incident import Incident
from npuwatch.correlation.kinds import KIND_OF_CODE, KINDS
from tests.conftest import REPO

DOC = REPO / "docs" / "incident-kinds.md"


def test_every_kind_has_one_row_in_the_documentation_with_its_code_meaning_and_check() -> None:
    rows = {
        cells[1].strip("` "): [cell.strip().replace("\\|", "|") for cell in cells[2:5]]
        for line in DOC.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `") and len(cells := re.split(r"(?<!\\)\|", line)) > 5
    }
    assert set(rows) == set(KINDS)
    for name, kind in KINDS.items():
        code = str(kind.faultdiag_code) if kind.faultdiag_code else "—"
        assert rows[name] == [code, kind.meaning, kind.check_first], name


def test_faultdiag_codes_are_unique_and_the_new_families_have_none() -> None:
    codes = [kind.faultdiag_code for kind in KINDS.values() if kind.faultdiag_code is not None]
    assert len(codes) == len(set(codes)) == len(KIND_OF_CODE)
    for name in ("init_nic_mismatch", "link_network", "hccl_env_invalid", "setting_mismatch"):
        assert KINDS[name].faultdiag_code is None


def test_an_incident_of_a_kind_faultdiag_lacks_says_null_for_its_code() -> None:
    incident = Incident(
        kind="init_rank_not_called",
        summary="rank 1 failed first",
        communicator="10.0.0.1%eth0_60000_0_1",
        root_cause=[],
        waiting_chain=[],
        victims=[],
        unheard=[],
        evidence=[],
        confidence=0.8,
    )
    found = incident.to_dict()
    assert found["kind"] == "init_rank_not_called"
    assert found["faultdiag_code"] is None
    assert found["check_first"] == KINDS["init_rank_not_called"].check_first
