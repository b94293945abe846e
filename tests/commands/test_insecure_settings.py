"""Insecure settings said out loud, by `config check`, the agent and the correlator alike.

A secret file (password, API key, TLS private key, a web configuration with password hashes)
that another user may read, and any file npuwatch takes its trust from that another user owns
or may change, is refused at the check and at start, in one line naming the file, its mode and
the fix, with the input-error exit code 2. `verify_certificates = false` is warned about in one
line, and the check still passes.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.npuwatch_command import clean_environment, run_npuwatch

EXIT_INPUT = 2
EXIT_FINDINGS = 1
REFUSED_WITH = {
    "config check": EXIT_FINDINGS,
    "agent": EXIT_INPUT,
    "correlate --check": EXIT_FINDINGS,
}
"""The checks find a problem in what they check (1); the agent cannot start on it (2)."""
SECRET = "s3cret-password-value"
SERVICE_USER = "npuwatch-test-owner"

Config = Callable[[str], Path]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """A configuration file of the agent with `text` after a state directory of its own."""

    def write(text: str) -> Path:
        path = tmp_path / "npuwatch.toml"
        state = tmp_path / "state"
        path.write_text(f'[agent]\nstate_directory = "{state}"\n{text}', encoding="utf-8")
        return path

    return write


def secret_file(folder: Path, name: str, mode: int, text: str = SECRET) -> Path:
    path = folder / name
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def search_engine(setting: str, path: Path, *, extra: str = "") -> str:
    user = 'username = "npuwatch"\n' if setting == "password_file" else ""
    return (
        '[sinks.elasticsearch]\nenabled = true\nhosts = ["https://127.0.0.1:9"]\n'
        f'{user}{setting} = "{path}"\n{extra}'
    )


def starts(*args: str) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """`config check`, the agent and the correlator's check, each on the configuration (the
    refusals stop each before it does anything)."""
    path = args[0]
    return [
        ("config check", run_npuwatch("config", "check", path)),
        ("agent", run_npuwatch("agent", "--config", path, timeout=120)),
        ("correlate --check", run_npuwatch("correlate", "--check", "--config", path)),
    ]


def one_refusal(done: subprocess.CompletedProcess[str], command: str = "config check") -> str:
    assert done.returncode == REFUSED_WITH[command], (command, done.stderr)
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert SECRET not in line
    return line


# --- secrets others may read --------------------------------------------------------------


@pytest.mark.parametrize("setting", ["password_file", "api_key_file"])
@pytest.mark.parametrize(
    ("mode", "who"),
    [
        pytest.param(0o644, "its group and others", id="0644"),
        pytest.param(0o640, "its group", id="0640"),
    ],
)
def test_a_search_engine_secret_others_may_read_stops_the_check_the_agent_and_the_correlator(
    tmp_path: Path, config: Config, setting: str, mode: int, who: str
) -> None:
    secret = secret_file(tmp_path, "es-secret", mode)
    path = config(search_engine(setting, secret))

    for command, done in starts(str(path)):
        line = one_refusal(done, command)
        assert line.startswith("npuwatch: [sinks.elasticsearch] the "), command
        assert f"{secret} is readable by {who} (mode 0{mode:o})" in line, command
        assert line.endswith(f"run `chmod 600 {secret}`"), command


def test_the_same_secret_made_private_passes(tmp_path: Path, config: Config) -> None:
    secret = secret_file(tmp_path, "es-password", 0o644)
    path = config(search_engine("password_file", secret))
    assert run_npuwatch("config", "check", str(path)).returncode == EXIT_FINDINGS

    secret.chmod(0o600)

    done = run_npuwatch("config", "check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_secret_others_may_write_is_refused_as_writable(tmp_path: Path, config: Config) -> None:
    secret = secret_file(tmp_path, "es-api-key", 0o602)
    path = config(search_engine("api_key_file", secret))

    line = one_refusal(run_npuwatch("config", "check", str(path)))

    assert f"{secret} is writable by others (mode 0602)" in line


def test_a_ca_file_anyone_may_read_is_fine_but_one_others_may_change_is_refused(
    tmp_path: Path, config: Config
) -> None:
    """A CA certificate is public; whoever can replace it chooses whom npuwatch trusts."""
    ca = secret_file(tmp_path, "ca.pem", 0o644, "not checked as a certificate here")
    key = secret_file(tmp_path, "es-api-key", 0o600)
    path = config(search_engine("api_key_file", key, extra=f'ca_file = "{ca}"\n'))
    assert run_npuwatch("config", "check", str(path)).returncode == 0

    ca.chmod(0o664)

    line = one_refusal(run_npuwatch("config", "check", str(path)))
    assert f"the CA certificate file {ca} is writable by its group (mode 0664)" in line
    assert line.endswith(f"run `chmod go-w {ca}`")


# --- the metrics endpoint's web configuration --------------------------------------------------

HASH = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"


def web_config(config: Config, web: Path) -> Path:
    return config(f'[sinks.prometheus]\nlisten = "127.0.0.1:0"\nweb_config_file = "{web}"\n')


def test_a_tls_key_others_may_read_stops_the_check_and_the_agent(
    tmp_path: Path, config: Config
) -> None:
    key = tmp_path / "metrics.key"
    cert = tmp_path / "metrics.crt"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    key.chmod(0o644)
    tls = f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}"
    web = secret_file(tmp_path, "web.yml", 0o644, tls)  # no password hash: others may read it
    path = web_config(config, web)

    for command, done in starts(str(path))[:2]:
        line = one_refusal(done, command)
        assert line == (
            f"npuwatch: {web}: tls_server_config.key_file: the TLS private key {key} is "
            "readable by its group and others (mode 0644): refused, as ssh refuses such a "
            f"private key; run `chmod 600 {key}`"
        ), command

    key.chmod(0o600)
    assert run_npuwatch("config", "check", str(path)).returncode == 0


def test_a_web_configuration_with_password_hashes_others_may_read_is_refused(
    tmp_path: Path, config: Config
) -> None:
    web = secret_file(tmp_path, "web.yml", 0o644, f"basic_auth_users:\n  prometheus: '{HASH}'")
    path = web_config(config, web)

    line = one_refusal(run_npuwatch("config", "check", str(path)))

    assert line == (
        f"npuwatch: {web}: basic_auth_users: the web configuration file is readable by its "
        "group and others (mode 0644): refused, as ssh refuses such a private key; "
        f"run `chmod 600 {web}`"
    )


def test_a_web_configuration_others_may_change_is_refused_even_without_users(
    tmp_path: Path, config: Config
) -> None:
    web = secret_file(tmp_path, "web.yml", 0o666, "# plain HTTP for now")
    path = web_config(config, web)

    line = one_refusal(run_npuwatch("config", "check", str(path)))

    assert line.startswith(f"npuwatch: {web}: the web configuration file is writable by")
    web.chmod(0o644)  # no secret in it: others may read it
    assert run_npuwatch("config", "check", str(path)).returncode == 0


# --- a secret another user owns -------------------------------------------------------------


@pytest.fixture
def another_user() -> Iterator[pwd.struct_passwd]:
    """A real unprivileged user, made for the test and removed after it."""
    if os.geteuid() != 0:
        pytest.skip("creating a user and giving it a file needs root (CI runs as root)")
    subprocess.run(["userdel", SERVICE_USER], capture_output=True, check=False)
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        check=True,
        capture_output=True,
    )
    try:
        yield pwd.getpwnam(SERVICE_USER)
    finally:
        subprocess.run(["userdel", SERVICE_USER], check=True, capture_output=True)


@pytest.mark.parametrize("setting", ["password_file", "api_key_file"])
def test_a_secret_another_user_owns_is_refused_even_when_private(
    tmp_path: Path, config: Config, another_user: pwd.struct_passwd, setting: str
) -> None:
    """That user can change it at will: the password npuwatch sends becomes theirs."""
    secret = secret_file(tmp_path, "es-secret", 0o600)
    os.chown(secret, another_user.pw_uid, another_user.pw_gid)
    path = config(search_engine(setting, secret))

    for command, done in starts(str(path)):
        line = one_refusal(done, command)
        assert (
            f"{secret} is owned by {SERVICE_USER} (uid {another_user.pw_uid}), who can change "
            "it (mode 0600): refused"
        ) in line, command
        assert line.endswith(f"run `chown root {secret}`"), command


# --- verify_certificates = false --------------------------------------------------------------

WARNING = (
    "npuwatch: WARNING [sinks.elasticsearch] verify_certificates = false: the search engine's "
    "certificate is not checked, so anyone on the path to https://127.0.0.1:9 can read and "
    "change what is shipped and take the credentials; set ca_file to the engine's CA instead"
)


@pytest.fixture
def unverified(tmp_path: Path, config: Config) -> Path:
    secret = secret_file(tmp_path, "es-api-key", 0o600)
    return config(search_engine("api_key_file", secret, extra="verify_certificates = false\n"))


def test_check_warns_once_about_unverified_certificates_and_passes(unverified: Path) -> None:
    done = run_npuwatch("config", "check", str(unverified))

    assert done.returncode == 0
    assert done.stderr.splitlines() == [WARNING]
    assert done.stdout.startswith(f"{unverified}: ok\n")


def test_the_correlator_warns_once_about_unverified_certificates(unverified: Path) -> None:
    done = run_npuwatch("correlate", "--check", "--config", str(unverified))

    assert done.returncode == 0
    assert done.stderr.splitlines() == [WARNING]


def test_the_agent_warns_once_about_unverified_certificates_when_it_starts(
    unverified: Path,
) -> None:
    agent = subprocess.Popen(
        [sys.executable, "-m", "npuwatch", "agent", "--config", str(unverified)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )
    lines: list[str] = []
    try:
        assert agent.stderr is not None
        for line in agent.stderr:
            lines.append(line.rstrip("\n"))
            if " following " in line:  # started: everything said at start is said
                break
    finally:
        agent.send_signal(signal.SIGTERM)
        _, rest = agent.communicate(timeout=120)
    lines.extend(rest.splitlines())

    assert agent.returncode == 0, lines
    assert [line for line in lines if "verify_certificates" in line] == [WARNING]
