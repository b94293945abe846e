"""The wheel installed in a fresh virtual environment does what users run, from a folder that
is not the checkout: the same output as the checkout's code, and the verdict of each tree."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.install.installing import (
    Artefacts,
    Environment,
    clean_environment,
    run,
    succeeded,
    tree_names,
)

pytestmark = pytest.mark.integration

VERDICTS = {
    "aicore-exception": (
        1,
        "Most likely first failure: AI Core or vector core exception — device 1",
    ),
    "clean-run": (0, "Result: no error records in 60 records."),
    "hccl-timeout": (
        1,
        "Most likely first failure: RDMA transport error — host-b, device 2, pid 7790",
    ),
    "op-compile-failure": (
        1,
        "Most likely first failure: Operator compilation failed — pid 200452",
    ),
    "out-of-memory": (1, "Most likely first failure: Memory allocation failed — pid 51220"),
}
"""Each bundled tree: the exit status of `npuwatch scan` and the start of its verdict line."""

AGENT_TREE = "trees/hccl-timeout"
AGENT_TIMEOUT_S = 60.0


def from_checkout(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The same command run by the checkout's code (the development install)."""
    return run([sys.executable, "-m", "npuwatch", *args], cwd)


def test_every_bundled_tree_has_an_expected_verdict() -> None:
    assert sorted(VERDICTS) == tree_names()


def test_version_is_the_wheel_s(installed: Environment, artefacts: Artefacts, work: Path) -> None:
    result = succeeded(installed.run("--version", cwd=work))
    assert result.stdout == f"npuwatch {artefacts.version} (C speedups on)\n"


def test_the_environment_runs_its_own_copy_with_the_c_first_pass(
    installed: Environment, work: Path
) -> None:
    script = "import npuwatch; print(npuwatch.__file__)"
    location = Path(succeeded(run([installed.python, "-c", script], work)).stdout.strip())
    assert location.is_relative_to(installed.root)
    assert installed.native(work)


@pytest.mark.parametrize("tree", sorted(VERDICTS))
def test_scan_of_a_bundled_tree_gives_its_verdict(
    installed: Environment, work: Path, tree: str
) -> None:
    status, verdict = VERDICTS[tree]
    result = installed.run("scan", f"trees/{tree}", cwd=work)
    assert result.stderr == ""
    assert result.returncode == status
    assert any(line.startswith(verdict) for line in result.stdout.splitlines()), result.stdout


def test_scan_of_every_tree_says_what_the_checkout_s_code_says(
    installed: Environment, work: Path
) -> None:
    result = installed.run("scan", "--json", "trees", cwd=work)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["files"] == sum(
        len(list(tree.rglob("*.log"))) for tree in (work / "trees").iterdir()
    )
    reference = from_checkout("scan", "--json", "trees", cwd=work)
    assert (result.stdout, result.stderr) == (reference.stdout, reference.stderr)


def test_rules_check_and_rules_test_pass_with_the_installed_packs(
    installed: Environment, work: Path
) -> None:
    check = succeeded(installed.run("rules", "check", cwd=work))
    assert check.stdout.endswith(" packs: OK\n")
    assert check.stdout == from_checkout("rules", "check", cwd=work).stdout
    examples = succeeded(installed.run("rules", "test", cwd=work))
    assert ": 0 failed, " in examples.stdout
    assert examples.stdout == from_checkout("rules", "test", cwd=work).stdout


def test_the_example_configuration_piped_into_config_check_is_valid(
    installed: Environment, work: Path
) -> None:
    pipeline = f"set -o pipefail; {installed.npuwatch} config example | {installed.npuwatch} config check -"
    result = succeeded(run(["bash", "-c", pipeline], work))
    lines = result.stdout.splitlines()
    assert lines[0] == "<stdin>: ok"
    packs = next(installed.root.glob("lib/python*/site-packages/npuwatch/rules/packs"))
    assert lines[-1].startswith("rules: ")
    assert lines[-1].endswith(f" packs from {packs}")


def test_doctor_prints_one_json_document(installed: Environment, work: Path) -> None:
    result = installed.run("doctor", "--json", cwd=work)
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1
    assert document["checks"]
    assert {check["status"] for check in document["checks"]} <= {"ok", "warn", "fail", "absent"}


def console_documents(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def is_event(document: dict[str, Any]) -> bool:
    """A rule event, or a collective event of the failure extraction (not a log record)."""
    return "rule" in document or "collective" in document.get("ascend", {})


def test_the_agent_journals_every_record_of_a_tree_and_grep_finds_them(
    installed: Environment, work: Path, tmp_path: Path
) -> None:
    summary = json.loads(installed.run("scan", "--json", AGENT_TREE, cwd=work).stdout)
    records = summary["records"]
    config = tmp_path / "npuwatch.toml"
    # No npu-smi here, and no /metrics port that other tests on this machine may be using.
    config.write_text("[devices]\nenabled = false\n[sinks.prometheus]\nenabled = false\n")
    state, console = tmp_path / "state", tmp_path / "console.jsonl"
    command = [installed.npuwatch, "agent", "--config", config, "--root", AGENT_TREE]
    command += ["--state-directory", state, "--console", "--json"]
    with console.open("w", encoding="utf-8") as out:
        agent = subprocess.Popen(
            [str(part) for part in command],
            cwd=work,
            stdout=out,
            stderr=subprocess.PIPE,
            env=clean_environment(),
        )
        try:
            deadline = time.monotonic() + AGENT_TIMEOUT_S
            while time.monotonic() < deadline and agent.poll() is None:
                if sum(not is_event(d) for d in console_documents(console)) >= records:
                    break
                time.sleep(0.2)
            agent.send_signal(signal.SIGTERM)
            _, err = agent.communicate(timeout=AGENT_TIMEOUT_S)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
    assert agent.returncode == 0, err.decode()
    documents = console_documents(console)
    events = sum(map(is_event, documents))
    assert len(documents) - events == records
    assert events > 0

    # --journal takes the state directory the agent was given, or the journal inside it.
    def grep(*args: str | Path) -> str:
        return succeeded(installed.run("grep", *args, cwd=work)).stdout

    assert grep("--journal", state, "-c") == f"{records}\n"
    assert grep("--journal", state / "journal", "--events", "-c") == f"{events}\n"
    errors = summary["levels"]["ERROR"]
    assert grep("--journal", state, "--level", "ERROR", "-c") == f"{errors}\n"
