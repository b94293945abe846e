"""`npuwatch config check|example`: exit codes 0 valid, 1 problems, 2 no such file or rules
that do not load."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import npuwatch.agent.plans
import npuwatch.commands.config_run
import npuwatch.config
from npuwatch.cli import main
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from tests.conftest import REPO
from tests.npu_smi_samples import FAKE_NPU_SMI
from tests.npuwatch_command import run_npuwatch


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NPUWATCH_* variable and no /etc/npuwatch/rules.d of the machine running the tests
    leaks into them."""
    for name in list(os.environ):
        if name.upper().startswith("NPUWATCH_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(npuwatch.agent.plans, "SYSTEM_RULES", tmp_path / "no-rules.d")


def builtin_rules_line() -> str:
    ruleset = load_rules([DEFAULT_PACKS])
    return f"rules: {len(ruleset.rules)} rules in {len(ruleset.files)} packs from {DEFAULT_PACKS}"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "npuwatch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_check_of_a_valid_file_prints_ok_the_journal_and_the_log_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    path = write(
        tmp_path,
        f'[agent]\nhost_name = "node-7"\nstate_directory = "{tmp_path}"\n'
        f'[sources]\nroots = ["{logs}"]\n',
    )
    assert main(["config", "check", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{path}: ok",
        "host: node-7",
        f"journal: {tmp_path / 'journal'}",
        f"log root: {logs}",
        "device telemetry: off: npu-smi not found (no driver here? set devices.npu_smi_command)",
        "search engine: off (sinks.elasticsearch.enabled = false)",
        "prometheus: /metrics on :9816",
        builtin_rules_line(),
    ]
    assert captured.err == ""


def test_check_refuses_a_log_root_the_file_names_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a typo in sources.roots passed the check, and the agent followed nothing."""
    there = tmp_path / "logs"
    there.mkdir()
    typo = tmp_path / "lgos"
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path}"\n[sources]\nroots = ["{there}", "{typo}"]\n',
    )
    assert main(["config", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == f"{path}: not ok (see below)"
    assert captured.err.splitlines() == [
        f"npuwatch: sources.roots: {typo} does not exist: fix the path, or create the folder "
        "(the agent follows a root once it appears)"
    ]
    typo.mkdir()  # made: the same file passes
    assert main(["config", "check", str(path)]) == 0


def test_check_says_which_npu_smi_the_agent_polls_and_where_profiling_runs_are_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "profiling"
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path}"\n'
        f'[devices]\nnpu_smi_command = "{FAKE_NPU_SMI} info"\ninterval = "1m"\n'
        f'[profiling]\npaths = ["{runs}", "{tmp_path}"]\n',
    )
    assert main(["config", "check", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"device telemetry: {FAKE_NPU_SMI} info every 1m" in lines
    assert f"profiling runs: {runs} (does not exist yet: runs are found once it does)" in lines
    assert f"profiling runs: {tmp_path}" in lines


def test_check_says_when_no_log_root_exists_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(npuwatch.agent.plans, "discover_roots", lambda sources, environ: [])
    assert main(["config", "check", str(write(tmp_path, ""))]) == 0
    assert "log roots: none yet" in capsys.readouterr().out


def test_check_prints_each_problem_on_its_own_stderr_line_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, '[journal]\nmax_age = "soon"\n[sources]\nrootz = []\n')
    assert main(["config", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}: sources.rootz: unknown key (known keys: roots, ")
    assert lines[1] == (
        f"{path}: journal.max_age: expected a duration such as 10s, 5m, 1h or 30d, got 'soon'"
    )


def test_check_reports_a_toml_syntax_error_with_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "[journal]\nmax_age = \n")
    assert main(["config", "check", str(path)]) == 1
    assert capsys.readouterr().err == f"{path}:2:11: invalid TOML: invalid value\n"


def test_check_validates_the_environment_too_and_names_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPUWATCH_JOURNAL__SYNC", "fast")
    assert main(["config", "check", str(write(tmp_path, ""))]) == 1
    assert capsys.readouterr().err == (
        "environment NPUWATCH_JOURNAL__SYNC: journal.sync: input should be 'full' or 'normal', "
        "got 'fast'\n"
    )


def test_check_of_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.toml"
    assert main(["config", "check", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"npuwatch: {missing}: no such file (write one with ")
    assert len(captured.err.splitlines()) == 1


def test_check_of_a_folder_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "check", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"{tmp_path}: cannot read: ")


def test_check_without_a_file_uses_npuwatch_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, '[agent]\nhost_name = "from-variable"\n')
    monkeypatch.setenv("NPUWATCH_CONFIG", str(path))
    assert main(["config", "check"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [f"{path}: ok", "host: from-variable"]


def test_check_without_any_file_accepts_the_defaults_the_agent_would_run_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    default = tmp_path / "etc" / "npuwatch.toml"
    monkeypatch.setattr(npuwatch.commands.config_run, "DEFAULT_CONFIG_PATH", default)
    monkeypatch.setattr(npuwatch.config, "DEFAULT_CONFIG_PATH", default)
    monkeypatch.delenv("NPUWATCH_CONFIG", raising=False)
    assert main(["config", "check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{default}: no such file; the agent runs with the defaults")
    assert "journal: /var/lib/npuwatch/journal" in out


def test_check_without_a_file_still_rejects_a_bad_environment_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    default = tmp_path / "etc" / "npuwatch.toml"
    monkeypatch.setattr(npuwatch.commands.config_run, "DEFAULT_CONFIG_PATH", default)
    monkeypatch.setattr(npuwatch.config, "DEFAULT_CONFIG_PATH", default)
    monkeypatch.delenv("NPUWATCH_CONFIG", raising=False)
    monkeypatch.setenv("NPUWATCH_JOURNAL__MAX_AGE", "soon")
    assert main(["config", "check"]) == 1
    assert "NPUWATCH_JOURNAL__MAX_AGE" in capsys.readouterr().err


def test_example_prints_a_file_that_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "example"]) == 0
    text = capsys.readouterr().out
    assert "\n[journal]\n" in text
    path = write(tmp_path, text)
    assert main(["config", "check", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: ok\n")


def test_config_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["config", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "npuwatch config example > /etc/npuwatch/npuwatch.toml" in out
    assert "NPUWATCH_<SECTION>__<KEY>" in out


def test_config_without_an_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["config"])
    assert exited.value.code == 2
    assert "ACTION" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["elasticsearch.toml", "opensearch.toml"])
def test_the_example_sink_configurations_in_deploy_are_valid(name: str) -> None:
    path = Path(__file__).resolve().parents[2] / "deploy" / "config" / name
    config = npuwatch.config.load_config(path, {})
    assert config.sinks.elasticsearch.enabled
    assert config.sinks.elasticsearch.flavour == name.removesuffix(".toml")
    assert config.sinks.elasticsearch.namespace == "train_a"
    assert config.sinks.elasticsearch.min_level == "INFO"


def test_check_says_where_records_are_shipped_and_from_which_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path}"\n'
        '[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\n'
        'hosts = ["https://os-1:9200", "https://os-2:9200"]\nmin_level = "WARNING"\n'
        '[sinks.prometheus]\nlisten = "127.0.0.1:9816"\n',
    )
    assert main(["config", "check", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        "search engine: opensearch at https://os-1:9200, https://os-2:9200, namespace default, "
        "ships WARNING and above"
    ) in lines
    assert "prometheus: /metrics on 127.0.0.1:9816" in lines


# --- standard input ---------------------------------------------------------------------------


def check_stdin(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`npuwatch config check -` in its own process, `text` on its real standard input."""
    return run_npuwatch("config", "check", "-", *args, stdin=text, cwd=REPO)


def test_check_of_a_dash_reads_the_configuration_from_standard_input(tmp_path: Path) -> None:
    result = check_stdin(f'[agent]\nhost_name = "piped"\nstate_directory = "{tmp_path}"\n')
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout.splitlines()[:3] == [
        "<stdin>: ok",
        "host: piped",
        f"journal: {tmp_path / 'journal'}",
    ]


def test_the_example_piped_into_check_is_valid() -> None:
    example = run_npuwatch("config", "example", cwd=REPO)
    assert example.returncode == 0, example.stderr
    result = check_stdin(example.stdout)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<stdin>: ok\n")


def test_a_problem_on_standard_input_is_reported_against_stdin() -> None:
    result = check_stdin("[journal]\nmax_age = \n")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "<stdin>:2:11: invalid TOML: invalid value\n"


# --- the rule packs the agent would load ------------------------------------------------------

BROKEN_PACK = """\
pack: site
rules:
  - id: site.broken
    title: A condition that does not parse
    when: "log.level == "
    severity: error
    layer: runtime
    category: error
    advice: none
"""


def test_check_fails_when_npuwatch_s_own_packs_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without the packs (a wheel built without them) must fail the unit's
    ExecStartPre, not start an agent that exits and is restarted in a loop."""
    missing = tmp_path / "site-packages" / "npuwatch" / "rules" / "packs"
    monkeypatch.setattr(npuwatch.agent.plans, "DEFAULT_PACKS", missing)
    path = write(tmp_path, f'[agent]\nstate_directory = "{tmp_path}"\n')
    assert main(["config", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"npuwatch: {missing}:1:1: cannot read the file: No such file or directory",
        "npuwatch: the rules have errors: fix them and start again",
    ]


def test_check_fails_on_a_configured_pack_that_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "site.yaml"
    path = write(
        tmp_path, f'[agent]\nstate_directory = "{tmp_path}"\n[rules]\npaths = ["{missing}"]\n'
    )
    assert main(["config", "check", str(path)]) == 1
    assert (
        capsys.readouterr()
        .err.splitlines()[0]
        .startswith(f"npuwatch: {missing}:1:1: cannot read the file: ")
    )


def test_check_fails_on_a_broken_pack_in_the_system_rules_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "rules.d"
    system.mkdir()
    (system / "50-site.yaml").write_text(BROKEN_PACK, encoding="utf-8")
    monkeypatch.setattr(npuwatch.agent.plans, "SYSTEM_RULES", system)
    monkeypatch.setattr(npuwatch.commands.config_run, "DEFAULT_CONFIG_PATH", tmp_path / "none")
    monkeypatch.setattr(npuwatch.config, "DEFAULT_CONFIG_PATH", tmp_path / "none")
    assert main(["config", "check"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"npuwatch: {system / '50-site.yaml'}:5:")
    assert err[1] == "npuwatch: the rules have errors: fix them and start again"


def test_check_counts_the_configured_packs_after_the_builtin_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(BROKEN_PACK.replace('"log.level == "', '"log.level == ERROR"'), "utf-8")
    path = write(
        tmp_path, f'[agent]\nstate_directory = "{tmp_path}"\n[rules]\npaths = ["{site}"]\n'
    )
    assert main(["config", "check", str(path)]) == 0
    builtin = load_rules([DEFAULT_PACKS])
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"rules: {len(builtin.rules) + 1} rules in {len(builtin.files) + 1} packs from "
        f"{DEFAULT_PACKS}, {site}"
    )


@pytest.mark.integration
def test_check_and_the_agent_refuse_a_broken_pack_with_the_same_lines(tmp_path: Path) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(BROKEN_PACK, encoding="utf-8")
    (tmp_path / "logs").mkdir()
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path / "state"}"\n'
        f'[sources]\nroots = ["{tmp_path / "logs"}"]\n[rules]\npaths = ["{pack}"]\n'
        "[devices]\nenabled = false\n[sinks.prometheus]\nenabled = false\n",
    )
    check = run_npuwatch("config", "check", str(path))
    agent = run_npuwatch("agent", "--config", str(path))
    # The same lines; the check found a problem (1), the agent cannot start (2).
    assert (check.returncode, agent.returncode) == (1, 2)
    assert check.stdout == ""
    assert check.stderr.splitlines() == agent.stderr.splitlines()[-2:]
    assert check.stderr.startswith(f"npuwatch: {pack}:5:")


# --- the other files the agent reads before it starts -----------------------------------------


def test_check_fails_like_the_agent_on_a_secret_file_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "es-password"
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path}"\n'
        '[sinks.elasticsearch]\nenabled = true\nhosts = ["https://es-1:9200"]\n'
        f'username = "npuwatch"\npassword_file = "{secret}"\n',
    )
    assert main(["config", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"npuwatch: [sinks.elasticsearch] cannot read the password file {secret}: "
        "No such file or directory\n"
    )
    secret.write_text("s3cret\n", encoding="utf-8")
    secret.chmod(0o600)
    assert main(["config", "check", str(path)]) == 0
    assert "s3cret" not in capsys.readouterr().out


def test_check_fails_like_the_agent_on_a_web_configuration_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web = tmp_path / "web.yml"
    path = write(
        tmp_path,
        f'[agent]\nstate_directory = "{tmp_path}"\n[sinks.prometheus]\nweb_config_file = "{web}"\n',
    )
    assert main(["config", "check", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"npuwatch: {web}")


# --- the check and the agent refuse the same configurations, in the same words ---------------


def refusals(tmp_path: Path) -> dict[str, str]:
    """Configurations the agent refuses to start with, by what is wrong in them."""
    pack = tmp_path / "site.yaml"
    pack.write_text(BROKEN_PACK, encoding="utf-8")
    state = f'[agent]\nstate_directory = "{tmp_path / "state"}"\n'
    return {
        "a rule pack that does not load": f'{state}[rules]\npaths = ["{pack}"]\n',
        "a secret file nobody may read": (
            f"{state}[sinks.elasticsearch]\nenabled = true\nhosts = "
            f'["https://es-1:9200"]\nusername = "u"\npassword_file = "{tmp_path / "nothing"}"\n'
        ),
        "a web configuration that cannot be read": (
            f'{state}[sinks.prometheus]\nweb_config_file = "{tmp_path / "web.yml"}"\n'
        ),
        "an unknown sink option": f'{state}[sinks.console]\ncolour = "always"\n',
        "an unknown sink": f"{state}[sinks.kafka]\nenabled = true\n",
    }


@pytest.mark.parametrize(
    "wrong",
    [
        "a rule pack that does not load",
        "a secret file nobody may read",
        "a web configuration that cannot be read",
        "an unknown sink option",
        "an unknown sink",
    ],
)
def test_the_agent_refuses_what_the_check_refuses_with_the_same_lines(
    wrong: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, refusals(tmp_path)[wrong])
    check = main(["config", "check", str(path)])
    checked = capsys.readouterr()
    agent = main(["agent", "--config", str(path)])
    refused = capsys.readouterr()
    assert check in (1, 2) and agent == 2
    assert checked.out == "" and refused.out == ""
    # The check prints a wrong value as an editor reads it (`file: key: reason`); the agent puts
    # npuwatch's name in front. The lines are otherwise the same, and name file, key and reason.
    said = [line.removeprefix("npuwatch: ") for line in checked.err.splitlines()]
    assert said == [line.removeprefix("npuwatch: ") for line in refused.err.splitlines()]
    assert said and all(str(tmp_path) in line or "rules have errors" in line for line in said)
    assert not (tmp_path / "state").exists()  # neither of them wrote anything
