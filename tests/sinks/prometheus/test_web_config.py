"""The web configuration file: read once, every problem named by file and key."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from npuwatch.sinks.prometheus import web_config as web_config_module
from npuwatch.sinks.prometheus.passwords import NoBcrypt
from npuwatch.sinks.prometheus.web_config import WebConfigError, load_web_config
from tests.sinks.prometheus.conftest import Certificate

HASH = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"


def write(tmp_path: Path, text: str) -> Path:
    """The web configuration, private as one with users must be."""
    path = tmp_path / "web.yml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    return [str(problem) for problem in caught.value.problems]


def test_an_empty_file_means_plain_http_without_authentication(tmp_path: Path) -> None:
    security = load_web_config(write(tmp_path, "# nothing yet\n"))

    assert security.tls is None
    assert security.auth is None


def test_users_and_a_certificate_give_tls_and_authentication(
    tmp_path: Path, certificate: Certificate
) -> None:
    path = write(
        tmp_path,
        f"tls_server_config:\n  cert_file: {certificate.cert_file}\n"
        f"  key_file: {certificate.key_file}\n"
        f"basic_auth_users:\n  prometheus: '{HASH}'\n",
    )

    security = load_web_config(path)

    assert isinstance(security.tls, ssl.SSLContext)
    assert security.tls.minimum_version == ssl.TLSVersion.TLSv1_2
    assert security.auth is not None


def test_certificate_paths_are_relative_to_the_file(
    tmp_path: Path, certificate: Certificate
) -> None:
    folder = tmp_path / "conf"
    (folder / "tls").mkdir(parents=True)
    (folder / "tls" / "a.crt").write_bytes(certificate.cert_file.read_bytes())
    (folder / "tls" / "a.key").write_bytes(certificate.key_file.read_bytes())
    (folder / "tls" / "a.key").chmod(0o600)

    security = load_web_config(
        write(folder, "tls_server_config: {cert_file: tls/a.crt, key_file: tls/a.key}\n")
    )

    assert security.tls is not None


def test_client_certificates_can_be_required(tmp_path: Path, certificate: Certificate) -> None:
    path = write(
        tmp_path,
        f"tls_server_config:\n  cert_file: {certificate.cert_file}\n"
        f"  key_file: {certificate.key_file}\n  client_ca_file: {certificate.cert_file}\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n",
    )

    security = load_web_config(path)

    assert security.tls is not None
    assert security.tls.verify_mode == ssl.CERT_REQUIRED
    assert security.tls.minimum_version == ssl.TLSVersion.TLSv1_3


def test_an_unknown_or_unimplemented_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "http_server_config:\n  http2: false\n")

    assert problems(path) == [
        f"{path}: http_server_config: unknown key, or one that npuwatch does not implement"
    ]


def test_a_password_that_is_not_a_bcrypt_hash_is_named_with_its_user(tmp_path: Path) -> None:
    path = write(tmp_path, f"basic_auth_users:\n  alice: secret\n  bob: '{HASH}'\n")

    [problem] = problems(path)

    assert problem.startswith(f"{path}: basic_auth_users.alice: not a bcrypt hash")


def test_a_missing_certificate_is_named(tmp_path: Path, certificate: Certificate) -> None:
    path = write(
        tmp_path,
        f"tls_server_config:\n  cert_file: missing.crt\n  key_file: {certificate.key_file}\n",
    )

    assert problems(path) == [
        f"{path}: tls_server_config.cert_file: no such file: {tmp_path / 'missing.crt'}"
    ]


def test_a_key_that_is_not_a_key_is_named(tmp_path: Path, certificate: Certificate) -> None:
    (tmp_path / "bad.key").write_text("not a key\n")
    (tmp_path / "bad.key").chmod(0o600)
    path = write(
        tmp_path,
        f"tls_server_config:\n  cert_file: {certificate.cert_file}\n  key_file: bad.key\n",
    )

    [problem] = problems(path)

    assert problem.startswith(f"{path}: tls_server_config.cert_file: cannot load the certificate")


def test_checking_client_certificates_needs_a_ca(tmp_path: Path, certificate: Certificate) -> None:
    path = write(
        tmp_path,
        f"tls_server_config:\n  cert_file: {certificate.cert_file}\n"
        f"  key_file: {certificate.key_file}\n  client_auth_type: VerifyClientCertIfGiven\n",
    )

    assert problems(path) == [
        f"{path}: tls_server_config: client_auth_type VerifyClientCertIfGiven needs client_ca_file"
    ]


def test_invalid_yaml_is_placed_by_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "basic_auth_users:\n  alice: [unclosed\n")

    [problem] = problems(path)

    assert problem.startswith(f"{path}:3:1: invalid YAML")


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "- tls_server_config\n")

    assert problems(path) == [f"{path}: expected a mapping of keys, got list"]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yml") == [f"{tmp_path / 'nope.yml'}: no such file"]


def test_users_without_a_bcrypt_implementation_are_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_bcrypt() -> None:
        raise NoBcrypt("checking bcrypt hashes needs the bcrypt package (pip install bcrypt)")

    monkeypatch.setattr(web_config_module, "find_bcrypt", no_bcrypt)
    path = write(tmp_path, f"basic_auth_users:\n  alice: '{HASH}'\n")

    assert problems(path) == [
        f"{path}: basic_auth_users: checking bcrypt hashes needs the bcrypt package "
        "(pip install bcrypt)"
    ]
