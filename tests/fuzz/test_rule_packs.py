"""`npuwatch rules check` on any rule pack ends with its documented codes; and a pack it
accepts cannot stall whoever runs it: `scan` and `rules test` with it finish on the lines that
make a backtracking engine work hardest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given

from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.rule_packs import adversarial_lines, rule_pack


def pack_with(when: str, **more: Any) -> dict[str, Any]:
    rule = {
        "id": "fuzz.rule",
        "title": "t",
        "when": when,
        "severity": "error",
        "layer": "driver",
        "category": "device",
        "advice": "a",
        **more,
    }
    return {"pack": "fuzz-pack", "rules": [rule]}


CATASTROPHIC = pack_with("message ~ /(a+)+$/")
DEEP_NOT = pack_with("not " * 1000 + "log.level == ERROR")
DEEP_PARENTHESES = pack_with("(" * 1000 + "log.level == ERROR" + ")" * 1000)
UNKNOWN_DEDUPE_FIELD = pack_with("log.level == ERROR", dedupe={"within": "1d", "by": ["x"]})
UNKNOWN_THRESHOLD_FIELD = pack_with(
    "log.level == ERROR", threshold={"count": 2, "within": "1m", "by": ["x"]}
)
FLAT_AND_CHAIN = pack_with(" and ".join(["message contains x"] * 1000))
INFINITE_WINDOW = pack_with("log.level == ERROR", threshold={"count": 2, "within": float("inf")})


def write_pack(folder: Path, pack: Any) -> Path:
    path = folder / "pack.yaml"
    path.write_text(yaml.safe_dump(pack, allow_unicode=True), encoding="utf-8")
    return path


@fuzz_settings(80)
@given(pack=rule_pack())
@example(pack=DEEP_NOT)
@example(pack=DEEP_PARENTHESES)
@example(pack=FLAT_AND_CHAIN)
def test_rules_check_ends_with_a_documented_code_on_any_pack(
    pack: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = write_pack(tmp_path_factory.mktemp("pack"), pack)
    assert_kept_the_contract(run_in_process("rules", "check", str(path)))


@fuzz_settings(40)
@given(pack=rule_pack())
@example(pack=CATASTROPHIC)
@example(pack=INFINITE_WINDOW)
@example(pack=UNKNOWN_DEDUPE_FIELD)
@example(pack=UNKNOWN_THRESHOLD_FIELD)
def test_a_pack_the_check_accepts_takes_any_line_in_bounded_time(
    pack: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("accepted")
    path = write_pack(folder, pack)
    if run_in_process("rules", "check", str(path)).code != 0:
        return
    log = folder / "train.log"
    log.write_text("\n".join(adversarial_lines() * 2) + "\n", encoding="utf-8")
    scanned = run_in_process("scan", str(log), "--rules", str(path), "--json", "--timezone", "UTC")
    assert_kept_the_contract(scanned, codes=(0, 1))
    assert_kept_the_contract(run_in_process("rules", "test", str(path)), codes=(0, 1))
