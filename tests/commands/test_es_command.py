"""`npuwatch es setup|check` and the sink's settings: what is wrong before any request is one
line on stderr and exit 2 (usage) or 1 (`config check`), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuwatch.cli import main
from npuwatch.sinks.search.streams import policy_name
from npuwatch.sinks.search.templates import index_template, lifecycle_policy


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("NPUWATCH_"):
            monkeypatch.delenv(name)


def config_with(tmp_path: Path, sink: str) -> Path:
    path = tmp_path / "npuwatch.toml"
    path.write_text(
        f'[agent]\nstate_directory = "{tmp_path}"\n[sinks.elasticsearch]\nenabled = true\n{sink}',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        ('["localhost:9200"]', "'localhost:9200' is not a URL: write it as https://localhost:9200"),
        ('[""]', "'' is not a URL"),
        ('["http://es-1:92x0"]', "'http://es-1:92x0': the port is not a number"),
    ],
)
def test_a_host_that_is_not_a_url_fails_config_check_with_the_key(
    tmp_path: Path, hosts: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_with(tmp_path, f"hosts = {hosts}\n")
    assert main(["config", "check", str(path)]) == 1
    stderr = capsys.readouterr().err
    assert "sinks.elasticsearch.hosts" in stderr
    assert message in stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--host", ""], "[sinks.elasticsearch] hosts: '' is not a URL"),
        (
            ["--host", "ftp://es-1"],
            "[sinks.elasticsearch] hosts: 'ftp://es-1' is not a URL: "
            "write it as https://es-1 (http:// without TLS)",
        ),
        (["--namespace", "Train-A"], "[sinks.elasticsearch] namespace: namespace 'Train-A' "),
    ],
)
def test_bad_overrides_are_one_line_and_exit_2(
    tmp_path: Path, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_with(tmp_path, 'hosts = ["http://127.0.0.1:9"]\n')
    assert main(["es", "check", "--config", str(path), *arguments]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npuwatch: " + message), lines


def test_an_unreadable_ca_file_is_named_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-ca.pem"
    path = config_with(tmp_path, f'hosts = ["https://127.0.0.1:9"]\nca_file = "{missing}"\n')
    assert main(["es", "check", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"npuwatch: [sinks.elasticsearch] cannot read the CA certificate file {missing}: "
        "No such file or directory\n"
    )


def test_each_namespace_has_its_own_lifecycle_policy() -> None:
    """Clusters sharing an engine keep their data for different times."""
    assert policy_name("train_a") != policy_name("train_b")
    template = index_template("train_a", "elasticsearch")
    assert template["template"]["settings"]["index.lifecycle.name"] == policy_name("train_a")
    ism = lifecycle_policy("opensearch", 7, "train_b")["policy"]
    assert ism["ism_template"][0]["index_patterns"] == [".ds-logs-ascend.*-train_b-*"]
    assert ism["states"][0]["transitions"][0]["conditions"] == {"min_index_age": "7d"}
    ilm = lifecycle_policy("elasticsearch", 7, "train_b")["policy"]
    assert ilm["phases"]["delete"]["min_age"] == "7d"


# --- a password written into a URL is refused, and never repeated -----------------------------

SECRET = "pw-7f3a"
URL_WITH_A_PASSWORD = f"http://opsuser:{SECRET}@127.0.0.1:9"


@pytest.mark.parametrize("action", ["check", "setup"])
@pytest.mark.parametrize("where", ["file", "--host"])
def test_es_refuses_a_password_in_a_url_in_one_line_that_does_not_repeat_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str, where: str
) -> None:
    if where == "file":
        path = config_with(tmp_path, f'hosts = ["{URL_WITH_A_PASSWORD}"]\n')
        arguments = ["es", action, "--config", str(path)]
    else:
        path = config_with(tmp_path, 'hosts = ["http://127.0.0.1:9"]\n')
        arguments = ["es", action, "--config", str(path), "--host", URL_WITH_A_PASSWORD]
    assert main(arguments) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert "http://***@127.0.0.1:9: a user name or password in the URL is refused" in line
    assert SECRET not in line and "opsuser" not in line


def test_config_check_refuses_a_password_in_a_url_without_repeating_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_with(tmp_path, f'hosts = ["{URL_WITH_A_PASSWORD}"]\n')
    assert main(["config", "check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "http://***@127.0.0.1:9: a user name or password in the URL is refused" in err
    assert SECRET not in out + err


@pytest.mark.integration
def test_the_agent_refuses_to_start_with_a_password_in_a_url_and_does_not_repeat_it(
    tmp_path: Path,
) -> None:
    path = config_with(tmp_path, f'hosts = ["{URL_WITH_A_PASSWORD}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NPUWATCH_")}
    started = subprocess.run(
        [sys.executable, "-m", "npuwatch", "agent", "--config", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert started.returncode == 2, started.stderr
    assert started.stdout == ""
    [line] = started.stderr.splitlines()
    assert "http://***@127.0.0.1:9: a user name or password in the URL is refused" in line
    assert SECRET not in line
