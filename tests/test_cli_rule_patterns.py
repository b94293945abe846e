"""Rule packs that would hang or crash a command, as a user runs the commands: a pattern only a
backtracking engine can run, one that is catastrophic for it, conditions nested 10,000 deep, a
YAML error; each refused in one line, or run in linear time."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.harness import append, plog_line, plog_path
from tests.npuwatch_command import clean_environment, run_npuwatch

RULE = """\
pack: site
rules:
  - id: {rule_id}
    title: A run of a's
    when: {when}
    severity: warning
    layer: application
    category: test
    advice: Nothing to do; a test rule.
"""


def pack(folder: Path, when: str, rule_id: str = "site.a-run") -> Path:
    path = folder / "site.yaml"
    path.write_text(RULE.format(rule_id=rule_id, when=when), encoding="utf-8")
    return path


def test_rules_check_refuses_a_pattern_that_needs_backtracking_in_one_line(
    tmp_path: Path,
) -> None:
    path = pack(tmp_path, "message ~ /(a+)+\\1$/")
    done = run_npuwatch("rules", "check", str(path))
    assert done.returncode == 1  # a failed rule check, as for any problem in a pack
    assert done.stdout.splitlines() == [
        f"{path}:5:11: rule site.a-run: in 'when': bad regex /(a+)+\\1$/: a backreference "
        "(\\1, (?P=name)) needs a backtracking engine (rule patterns run in RE2, in linear time)",
        "1 problems",
    ]
    assert done.stderr == ""


def test_config_check_refuses_the_pack_in_one_line_as_the_agent_would_at_start(
    tmp_path: Path,
) -> None:
    path = pack(tmp_path, "message ~ /time(?=out)/i")
    config = tmp_path / "npuwatch.toml"
    config.write_text(f'[rules]\npaths = ["{path}"]\n', encoding="utf-8")
    done = run_npuwatch("config", "check", env=clean_environment(NPUWATCH_CONFIG=str(config)))
    assert done.returncode == 1
    (problem,) = [line for line in done.stderr.splitlines() if str(path) in line]
    assert "rule site.a-run" in problem and "a lookahead needs a backtracking engine" in problem
    assert "Traceback" not in done.stderr


def test_scan_with_a_pattern_catastrophic_for_backtracking_ends_with_its_findings(
    tmp_path: Path,
) -> None:
    """`(a+)+ \\d+$` on 30 a's and a '!' takes Python's re hours; each file also has lines the
    rule matches."""
    logs = tmp_path / "logs"
    for pid in (100, 101, 102):
        lines = [plog_line(pid, n, "ERROR", "a" * 30 + "!") for n in range(4)]
        lines += [plog_line(pid, 10, "ERROR", "aaaa")]
        append(plog_path(logs, pid), lines)
    path = pack(tmp_path, "message ~ /(a+)+ \\d+$/ and message ~ /(x+x+)+y|a/")
    done = run_npuwatch("scan", str(logs), "--rules", str(path), "--json", timeout=300)
    assert done.returncode == 1, done.stderr  # findings
    report = json.loads(done.stdout)
    assert report["lines"] == 15
    fired = [event for event in report["events"] if event["rule"]["id"] == "site.a-run"]
    assert sorted(event["process"]["pid"] for event in fired) == [100, 101, 102]


def test_rules_check_refuses_a_condition_nested_ten_thousand_deep_in_one_line(
    tmp_path: Path,
) -> None:
    path = pack(tmp_path, "(" * 10_000 + "log.level == ERROR" + ")" * 10_000)
    done = run_npuwatch("rules", "check", str(path))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{path}:5:43: rule site.a-run: in 'when': nested deeper than 32 (parentheses and "
        "'not'): write it flatter, with 'and' and 'or' lists",
        "1 problems",
    ]
    assert "Traceback" not in done.stderr


def test_rules_check_refuses_a_regex_nested_ten_thousand_deep_in_one_line(tmp_path: Path) -> None:
    path = pack(tmp_path, "message ~ /" + "(" * 10_000 + "a" + ")" * 10_000 + "/")
    done = run_npuwatch("rules", "check", str(path))
    assert done.returncode == 1
    (problem, count) = done.stdout.splitlines()
    assert problem.endswith(": groups nested deeper than 50") and count == "1 problems"
    assert "Traceback" not in done.stderr


def test_a_yaml_error_in_a_pack_is_one_line_with_its_place_and_what_to_do(
    tmp_path: Path,
) -> None:
    path = tmp_path / "site.yaml"
    path.write_text('pack: "site\x01"\nrules: []\n', encoding="utf-8")
    done = run_npuwatch("rules", "check", str(path))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{path}:1:12: character #x0001 is not allowed in YAML: control characters are not "
        "allowed; remove it",
        "1 problems",
    ]
    path.write_text("pack: site\nrules: [\n  {id: x\n", encoding="utf-8")
    scan = run_npuwatch("scan", str(tmp_path), "--rules", str(path))
    assert scan.returncode == 2
    assert scan.stderr.splitlines() == [
        f"npuwatch: {path}:4:1: not valid YAML: did not find expected ',' or '}}' (while "
        "parsing a flow mapping); fix the YAML syntax here",
        "npuwatch: the rules have errors (see above): fix them or leave out --rules",
    ]


def test_a_faultdiag_file_nested_too_deep_or_not_json_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    source = tmp_path / "kg-config.json"
    output = tmp_path / "faultdiag.yaml"
    source.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    deep = run_npuwatch("rules", "import-faultdiag", str(source), "-o", str(output))
    source.write_text('{"a": \n  [1, 2,,]}', encoding="utf-8")
    broken = run_npuwatch("rules", "import-faultdiag", str(source), "-o", str(output))
    assert (deep.returncode, broken.returncode) == (2, 2)
    assert deep.stderr == (
        f"npuwatch: cannot import {source}: nested too deep to be a FaultDiag knowledge base\n"
    )
    assert broken.stderr == (
        f"npuwatch: cannot import {source}: not valid JSON at line 2, column 9: Expecting value\n"
    )
    assert not output.exists()


def test_the_agent_refuses_to_start_on_the_pack_in_one_line(tmp_path: Path) -> None:
    path = pack(tmp_path, "log.level == ERROR and message ~ /(?<!un)known/")
    config = tmp_path / "npuwatch.toml"
    config.write_text(f'[rules]\npaths = ["{path}"]\n', encoding="utf-8")
    done = run_npuwatch(
        "agent", "--root", str(tmp_path / "logs"), "--state-directory", str(tmp_path / "state"),
        env=clean_environment(NPUWATCH_CONFIG=str(config)), timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"npuwatch: {path}:5:34: rule site.a-run: in 'when': bad regex /(?<!un)known/: a "
        "negative lookbehind needs a backtracking engine (rule patterns run in RE2, in linear "
        "time)",
        "npuwatch: the rules have errors: fix them and start again",
    ]
