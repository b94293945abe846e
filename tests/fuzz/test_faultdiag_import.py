"""`npuwatch rules import-faultdiag` on any knowledge base: it ends with its documented codes,
and the pack it writes is one `rules check` accepts and that takes any line in bounded time."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given

from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.faultdiag_files import knowledge_base
from tests.fuzz.rule_packs import adversarial_lines


def entry_with(**fields: object) -> bytes:
    entry = {"attribute": {"class": "Software"}, "regex": {"in": ["ctx is NULL"]}, **fields}
    return json.dumps({"knowledge-repository": {"AISW_1": entry}}).encode()


@fuzz_settings(80)
@given(data=knowledge_base())
@example(data=entry_with(attribute={"class": "Software", "suggestion_en": 5}))
@example(data=entry_with(rule=5))
@example(data=b"[" * 100000 + b"]" * 100000)
@example(data=entry_with(regex={"in": ["a"] * 30}))
@example(data=json.dumps({"A" * 300: {"attribute.cause_en": "x", "regex.in": ["ctx"]}}).encode())
def test_import_faultdiag_writes_a_pack_that_loads_and_runs_in_bounded_time(
    data: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("faultdiag")
    source, pack = folder / "kg-config.json", folder / "faultdiag.yaml"
    source.write_bytes(data)
    imported = run_in_process("rules", "import-faultdiag", str(source), "-o", str(pack))
    assert_kept_the_contract(imported, codes=(0, 2))
    if imported.code != 0:
        return
    checked = run_in_process("rules", "check", str(pack))
    assert_kept_the_contract(checked, codes=(0,))
    log = folder / "train.log"
    log.write_text("\n".join(adversarial_lines()) + "\n", encoding="utf-8")
    scanned = run_in_process("scan", str(log), "--rules", str(pack), "--json", "--timezone", "UTC")
    assert_kept_the_contract(scanned, codes=(0, 1))
