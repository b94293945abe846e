"""Loading packs: every problem reported as file:line:column, overrides and disabling by id."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.rules.pack import RuleLoadError

GOOD_RULE = """\
  - id: site.gpu-fan
    title: Fan failure
    when: log.level == ERROR and message contains "fan"
    severity: warning
    layer: driver
    category: device
    advice: Replace the fan.
    examples:
      match: ["[ERROR] DRV(1,p):2025-01-01-00:00:00.000.000 [fan.c:1] fan stopped"]
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(*paths: Path) -> list[str]:
    with pytest.raises(RuleLoadError) as error:
        load_rules(list(paths))
    return [str(problem) for problem in error.value.problems]


def test_a_good_pack_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "site.yaml", "pack: site\nrules:\n" + GOOD_RULE)
    ruleset = load_rules([path])
    assert [rule.id for rule in ruleset.rules] == ["site.gpu-fan"]
    assert ruleset.rules[0].origin == f"{path}:3"


def test_a_condition_error_points_at_the_file_line_and_column(tmp_path: Path) -> None:
    text = "pack: site\nrules:\n" + GOOD_RULE.replace(
        'when: log.level == ERROR and message contains "fan"', "when: log.level == ERROR and"
    )
    path = write(tmp_path, "site.yaml", text)
    assert problems_of(path) == [
        f"{path}:5:33: rule site.gpu-fan: in 'when': expected a comparison such as "
        "'log.level == ERROR' after 'and'"
    ]


def test_a_condition_error_in_a_block_scalar_is_placed_on_its_own_line(tmp_path: Path) -> None:
    text = "pack: site\nrules:\n" + GOOD_RULE.replace(
        'when: log.level == ERROR and message contains "fan"',
        "when: >-\n      log.level == ERROR\n      and process.pidd == 3",
    )
    path = write(tmp_path, "site.yaml", text)
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:7:11: rule site.gpu-fan: in 'when': unknown field")


def test_an_unknown_key_and_a_bad_value_are_reported_at_their_place(tmp_path: Path) -> None:
    text = "pack: site\nrules:\n" + GOOD_RULE.replace(
        "severity: warning", "severity: loud\n    colour: red"
    )
    path = write(tmp_path, "site.yaml", text)
    found = problems_of(path)
    assert (
        f"{path}:6:15: rules.0.severity: Input should be 'critical', 'error', 'warning' or 'info'"
        in found
    )
    assert f"{path}:7:13: rules.0.colour: unknown key 'colour'" in found


def test_invalid_yaml_is_reported_with_its_position(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.yaml", "pack: site\nrules:\n  - id: [unclosed\n")
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:4:1: not valid YAML")


def test_a_bad_extract_pattern_and_a_duplicate_id(tmp_path: Path) -> None:
    bad = GOOD_RULE.replace("    examples:", "    extract: ['no groups here']\n    examples:")
    path = write(tmp_path, "site.yaml", "pack: site\nrules:\n" + GOOD_RULE + bad)
    found = problems_of(path)
    assert any("appears twice in this pack" in problem for problem in found)


def test_a_later_pack_replaces_a_rule_by_id_and_can_disable_rules(tmp_path: Path) -> None:
    override = GOOD_RULE.replace("site.gpu-fan", "cann.code.e19999").replace(
        "Fan failure", "E19999, our way"
    )
    site = write(
        tmp_path,
        "site.yaml",
        "pack: site\ndisable: [operations.debug-logging-left-on]\nrules:\n" + override,
    )
    ruleset = load_rules([DEFAULT_PACKS, site])
    rules = ruleset.by_id()
    assert rules["cann.code.e19999"].spec.title == "E19999, our way"
    assert rules["cann.code.e19999"].pack == "site"
    assert "operations.debug-logging-left-on" not in rules
    assert len(ruleset.rules) == len(load_rules([DEFAULT_PACKS]).rules) - 1


def test_a_folder_is_read_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, "b.yaml", "pack: b\nrules:\n" + GOOD_RULE.replace("Fan failure", "from b"))
    write(tmp_path, "a.yml", "pack: a\nrules:\n" + GOOD_RULE.replace("Fan failure", "from a"))
    write(tmp_path, "notes.txt", "not a pack")
    ruleset = load_rules([tmp_path])
    assert ruleset.rules[0].spec.title == "from b"
    assert [Path(f).name for f in ruleset.files] == ["a.yml", "b.yaml"]
