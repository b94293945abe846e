"""Input nested deeper than a parser can recurse is one malformed file, said in a problem:
never a RecursionError traceback, never a crash of libyaml's C loader (a segmentation fault).
A tool's JSON output, a rule pack, a web configuration, the configuration itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.npuwatch_command import run_npuwatch

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    ("command", "copy", "replaced"),
    [
        ("precision", None, "anomaly_analyze_1740909600000000000.json"),
        ("precision", None, "compare_result_1.json"),
        (
            "monitor",
            FIXTURES / "debug_tools" / "monitor" / "two_ranks",
            "anomaly_detected/anomaly_rank0.json",
        ),
        (
            "profile",
            FIXTURES / "profiling" / "torch_2rank" / "worker0_31001_20250301080000123_ascend_pt",
            "ASCEND_PROFILER_OUTPUT/communication.json",
        ),
    ],
)
def test_a_json_output_nested_too_deep_is_a_malformed_file(
    tmp_path: Path, command: str, copy: Path | None, replaced: str
) -> None:
    target = tmp_path / "output"
    if copy is not None:
        shutil.copytree(copy, target)
    else:
        target.mkdir()
    (target / replaced).write_text(DEEP, encoding="utf-8")
    done = run_npuwatch(command, "summary", str(target), timeout=120)
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    assert "nested too deep to be read" in done.stdout + done.stderr


def _pack_lines(body: str) -> str:
    return f"pack: site\nrules: {body}\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # (PyYAML 6.0.4 refuses such nesting itself, before npuwatch's own check sees it)
        (
            _pack_lines("[" * 200_000 + "]" * 200_000),
            (
                "not a rule pack: collections nested deeper than 64",
                "exceeded maximum nesting depth",
            ),
        ),
        (
            "pack: site\na0: &a0 [x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 20)),
            ("not a rule pack: more than 100 aliases",),
        ),
    ],
    ids=["nested", "aliases"],
)
def test_a_rule_pack_too_deep_or_of_too_many_aliases_is_refused_in_one_line(
    tmp_path: Path, text: str, reason: tuple[str, ...]
) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(text, encoding="utf-8")
    done = run_npuwatch("rules", "check", str(pack), timeout=120)
    assert done.returncode == 1, done.stderr  # before: -11, libyaml's stack overflowed
    (said,) = [line for line in (done.stdout + done.stderr).splitlines() if str(pack) in line]
    assert any(words in said for words in reason), said


def test_a_configuration_nested_too_deep_is_a_problem_of_the_file(tmp_path: Path) -> None:
    config = tmp_path / "npuwatch.toml"
    config.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    done = run_npuwatch("config", "check", str(config), timeout=120)
    assert (done.returncode, done.stderr) == (
        1,
        f"{config}: arrays or tables nested too deep to be read\n",
    )
