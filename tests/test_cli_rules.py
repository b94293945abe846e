"""The `rules` commands and the findings of `scan`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuwatch.cli import main
from tests.conftest import TREES

BROKEN = """\
pack: site
rules:
  - id: site.broken
    title: Broken
    when: log.level == ERROR and (message contains "x"
    severity: error
    layer: runtime
    category: error
    advice: none
    examples: {match: ["x"]}
"""

FAILING_EXAMPLE = """\
pack: site
rules:
  - id: site.fan
    title: Fan
    when: log.level == ERROR and message contains "fan"
    severity: warning
    layer: driver
    category: device
    advice: Replace the fan.
    examples:
      match: ["[ERROR] DRV(1,p):2025-01-01-00:00:00.000.000 [fan.c:1] pump stopped"]
"""


def test_rules_check_passes_on_the_default_packs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "check"]) == 0
    assert capsys.readouterr().out.strip().endswith(": OK")


def test_rules_check_rejects_a_broken_file_with_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(BROKEN)
    assert main(["rules", "check", str(pack)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"{pack}:5:34: rule site.broken: in 'when': a '(' is not closed: expected ')'"


def test_rules_test_passes_on_the_default_packs_and_fails_on_a_wrong_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rules", "test"]) == 0
    assert "0 failed" in capsys.readouterr().out
    pack = tmp_path / "site.yaml"
    pack.write_text(FAILING_EXAMPLE)
    assert main(["rules", "test", str(pack)]) == 1
    output = capsys.readouterr().out
    assert "rule site.fan: example should match but does not" in output


def test_rules_list_shows_ids_severities_and_titles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["hccl.notify-wait-timeout", "ERROR"] for line in lines)
    assert main(["rules", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"id", "severity", "title", "layer", "category"} <= set(listed[0])


def test_a_missing_rules_path_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "check", "/no/such/pack.yaml"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_import_faultdiag_writes_a_pack_that_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "kg-config.json"
    source.write_text(
        json.dumps(
            {
                "knowledge-repository": {
                    "X_1": {
                        "attribute": {"class": "Software", "cause_en": "Empty context"},
                        "regex": {"in": ["ctx is NULL"]},
                    }
                }
            }
        )
    )
    output = tmp_path / "faultdiag.yaml"
    assert main(["rules", "import-faultdiag", str(source), "-o", str(output)]) == 0
    assert "wrote 1 rules" in capsys.readouterr().err
    assert main(["rules", "test", str(output)]) == 0


def test_scan_prints_the_verdict_and_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(TREES / "aicore-exception"), "--timezone", "UTC"]) == 1
    out = capsys.readouterr().out
    assert "Most likely first failure: AI Core or vector core exception" in out
    assert "What to check first:" in out
    assert "Findings (" in out


def test_scan_json_includes_verdict_findings_and_events(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(TREES / "out-of-memory"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["rule"] == "memory.alloc-failed"
    assert {f["rule"] for f in report["findings"]} >= {"memory.alloc-failed", "cann.code.memory"}
    assert all(event["event"]["kind"] == "alert" for event in report["events"])


def test_scan_takes_extra_rules_and_can_leave_rules_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(FAILING_EXAMPLE.replace('"fan"', '"Alloc mem failed"'))
    assert main(["scan", str(TREES / "out-of-memory"), "--json", "--rules", str(pack)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "site.fan" in {f["rule"] for f in report["findings"]}
    assert main(["scan", str(TREES / "out-of-memory"), "--json", "--no-rules"]) == 1
    assert "findings" not in json.loads(capsys.readouterr().out)


def test_scan_with_broken_rules_says_so_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(BROKEN)
    assert main(["scan", str(TREES / "clean-run"), "--rules", str(pack)]) == 2
    err = capsys.readouterr().err
    assert f"{pack}:5:34:" in err and "the rules have errors" in err


def test_scan_reads_its_rules_from_the_cache_the_second_time(tmp_path: Path) -> None:
    """The first scan fills the user's rule cache; the next one starts without YAML, pydantic or
    the condition grammar, and reports the same."""
    code = (
        "import sys\n"
        "from npuwatch.cli import main\n"
        f"code = main(['scan', {str(TREES / 'out-of-memory')!r}, '--json'])\n"
        "heavy = ('yaml', 'pydantic', 'pyparsing')\n"
        "sys.stderr.write(repr([name for name in heavy if name in sys.modules]))\n"
        "sys.exit(code)\n"
    )
    environment = {**os.environ, "NPUWATCH_CACHE": str(tmp_path / "cache")}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
        )
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [1, 1]
    assert runs[0].stderr == "['yaml', 'pydantic', 'pyparsing']"
    assert runs[1].stderr == "[]"
    assert runs[0].stdout == runs[1].stdout
    assert json.loads(runs[1].stdout)["verdict"]["rule"] == "memory.alloc-failed"
    assert len(list((tmp_path / "cache").glob("rules-*.json"))) == 1


def test_a_grouping_by_an_unknown_field_is_refused_by_the_check_not_met_by_the_agent(
    tmp_path: Path,
) -> None:
    """`dedupe.by` and `threshold.by` name record fields: an unknown one passed `rules check`
    and `config check`, then stopped the agent at its start (a restart loop under systemd)."""
    from tests.npuwatch_command import run_npuwatch

    for key in ("dedupe", "threshold"):
        pack = tmp_path / f"{key}.yaml"
        grouping = "{within: 1d, by: [x]}" if key == "dedupe" else "{count: 2, within: 1m, by: [x]}"
        pack.write_text(
            "pack: site\nrules:\n  - id: site.x\n    title: X\n    when: log.level == ERROR\n"
            f"    severity: error\n    layer: runtime\n    category: error\n    advice: a\n"
            f"    {key}: {grouping}\n",
            encoding="utf-8",
        )
        check = run_npuwatch("rules", "check", str(pack))
        assert check.returncode == 1
        assert f"rule site.x: {key}.by: unknown field 'x'" in check.stdout + check.stderr
        config = tmp_path / "npuwatch.toml"
        config.write_text(f'[rules]\npaths = ["{pack}"]\n', encoding="utf-8")
        done = run_npuwatch("config", "check", str(config))
        assert done.returncode == 1, done.stderr
        assert f"{key}.by: unknown field 'x'" in done.stderr
