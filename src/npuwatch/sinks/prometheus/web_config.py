"""The web configuration file of the metrics endpoint, in the format Prometheus and its
exporters use (`--web.config.file`), so that one file can serve all of them:

    tls_server_config:
      cert_file: /etc/npuwatch/tls/metrics.crt     # relative paths: from this file's folder
      key_file: /etc/npuwatch/tls/metrics.key
      client_ca_file: /etc/npuwatch/tls/ca.crt     # optional: check client certificates
      client_auth_type: RequireAndVerifyClientCert # or VerifyClientCertIfGiven, NoClientCert
      min_version: TLS12                           # TLS10 ... TLS13
    basic_auth_users:
      prometheus: $2b$12$...                       # bcrypt hash (htpasswd -nBC 12 prometheus)

The file is read and checked once, by `load_web_config`; every problem names the file, the key
and what was expected. A file another user could change is refused (it decides who may read the
metrics), and so is a private key, or this file with password hashes in it, that others could
read (secret_files). Keys of the Prometheus format that npuwatch does not implement (cipher
suites, `http_server_config`, ...) are refused rather than ignored, because ignoring a security
setting would quietly weaken it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from npuwatch.config.loading import ConfigError, ConfigProblem
from npuwatch.secret_files import Exposure, FileRefused, check_file
from npuwatch.sinks.prometheus.passwords import BCRYPT_HASH, BasicAuth, NoBcrypt, find_bcrypt
from npuwatch.yaml_input import shape_problem

_STRICT = ConfigDict(extra="forbid", frozen=True)
ClientAuth = Literal["NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"]
_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}


class WebConfigError(ConfigError):
    """The web configuration file cannot be read or is not valid."""


class TLSServerSection(BaseModel):
    """`tls_server_config`: serve HTTPS with this certificate and key."""

    model_config = _STRICT

    cert_file: Path = Field(description="the server certificate (PEM), with its chain")
    key_file: Path = Field(description="the certificate's private key (PEM)")
    client_ca_file: Path | None = Field(
        default=None, description="CA certificates that client certificates must chain to"
    )
    client_auth_type: ClientAuth = "NoClientCert"
    min_version: Literal["TLS10", "TLS11", "TLS12", "TLS13"] = "TLS12"

    @model_validator(mode="after")
    def _client_ca_when_verifying(self) -> TLSServerSection:
        if self.client_auth_type != "NoClientCert" and self.client_ca_file is None:
            raise ValueError(f"client_auth_type {self.client_auth_type} needs client_ca_file")
        return self


def _bcrypt_hash(value: str) -> str:
    if not BCRYPT_HASH.match(value):
        raise ValueError("not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 characters)")
    return value


class WebConfigFile(BaseModel):
    """The whole web configuration file."""

    model_config = _STRICT

    tls_server_config: TLSServerSection | None = None
    basic_auth_users: dict[str, Annotated[str, AfterValidator(_bcrypt_hash)]] | None = Field(
        default=None, description="user name → bcrypt hash of the password"
    )


@dataclass(frozen=True)
class WebSecurity:
    """What the endpoint runs with: a TLS context, basic authentication, both or neither."""

    tls: ssl.SSLContext | None = None
    auth: BasicAuth | None = None


def load_web_config(path: Path) -> WebSecurity:
    """Read, check and build the web configuration at `path`; raises WebConfigError naming the
    file and key of every problem."""
    label = str(path)
    model = _read(path)
    _check(path, "web configuration file", Exposure.TRUST, label, key=None)
    auth = None
    if model.basic_auth_users:
        # bcrypt hashes are slow to guess, not impossible: kept as /etc/shadow keeps its own.
        _check(path, "web configuration file", Exposure.SECRET, label, key="basic_auth_users")
        try:
            checker = find_bcrypt()
        except NoBcrypt as error:
            raise WebConfigError(
                [ConfigProblem(label, str(error), key="basic_auth_users")]
            ) from None
        auth = BasicAuth(model.basic_auth_users, checker)
    tls = None
    if model.tls_server_config is not None:
        tls = _tls_context(model.tls_server_config, path.parent, label)
    return WebSecurity(tls, auth)


def _read(path: Path) -> WebConfigFile:
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WebConfigError([ConfigProblem(label, "no such file")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise WebConfigError([ConfigProblem(label, f"cannot read: {error}")]) from None
    shape = shape_problem(text)
    if shape is not None:
        reason = f"not a web configuration: {shape.reason}"
        raise WebConfigError([ConfigProblem(label, reason, line=shape.line, column=shape.column)])
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        reason = f"invalid YAML: {error.problem}"
        if mark is None:
            raise WebConfigError([ConfigProblem(label, reason)]) from None
        problem = ConfigProblem(label, reason, line=mark.line + 1, column=mark.column + 1)
        raise WebConfigError([problem]) from None
    except yaml.YAMLError as error:
        raise WebConfigError([ConfigProblem(label, f"invalid YAML: {error}")]) from None
    if data is None:
        return WebConfigFile()  # an empty file: plain HTTP, no authentication
    if not isinstance(data, dict):
        reason = f"expected a mapping of keys, got {type(data).__name__}"
        raise WebConfigError([ConfigProblem(label, reason)])
    try:
        return WebConfigFile.model_validate(data)
    except ValidationError as error:
        raise WebConfigError([_problem(label, detail) for detail in error.errors()]) from None


def _problem(label: str, detail: ErrorDetails) -> ConfigProblem:
    key = ".".join(map(str, detail["loc"])) or None
    if detail["type"] == "extra_forbidden":
        return ConfigProblem(label, "unknown key, or one that npuwatch does not implement", key=key)
    return ConfigProblem(label, detail["msg"].removeprefix("Value error, "), key=key)


def _tls_context(section: TLSServerSection, folder: Path, label: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _TLS_VERSIONS[section.min_version]
    cert, key = folder / section.cert_file, folder / section.key_file
    for name, file in (("cert_file", cert), ("key_file", key)):
        if not file.is_file():
            raise WebConfigError(
                [ConfigProblem(label, f"no such file: {file}", key=f"tls_server_config.{name}")]
            )
    key_name = "tls_server_config.key_file"
    _check(cert, "TLS certificate", Exposure.TRUST, label, "tls_server_config.cert_file")
    _check(key, "TLS private key", Exposure.SECRET, label, key_name)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as error:
        reason = f"cannot load the certificate and key ({cert}, {key}): {error}"
        raise WebConfigError(
            [ConfigProblem(label, reason, key="tls_server_config.cert_file")]
        ) from None
    if section.client_ca_file is not None:
        ca = folder / section.client_ca_file
        ca_name = "tls_server_config.client_ca_file"
        _check(ca, "client CA certificate file", Exposure.TRUST, label, ca_name)
        try:
            context.load_verify_locations(cafile=ca)
        except (ssl.SSLError, OSError) as error:
            reason = f"cannot load CA certificates from {ca}: {error}"
            raise WebConfigError(
                [ConfigProblem(label, reason, key="tls_server_config.client_ca_file")]
            ) from None
    context.verify_mode = _CLIENT_AUTH[section.client_auth_type]
    return context


def _check(path: Path, what: str, exposure: Exposure, label: str, key: str | None) -> None:
    """WebConfigError when another user could change the file at `path`, or read it when it is
    a secret (secret_files); the problem is on `key` of the web configuration `label`."""
    try:
        check_file(path, what, exposure, say_path=str(path) != label)
    except FileRefused as error:
        raise WebConfigError([ConfigProblem(label, str(error), key=key)]) from None
