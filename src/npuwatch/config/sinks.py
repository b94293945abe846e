"""The sinks' sections of the configuration: the console, the search engine, Prometheus."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator

from npuwatch.config.sections import STRICT, STRICT_AND_DISCREET
from npuwatch.config.values import ByteSize, Duration
from npuwatch.setting_values import check_namespace, listen_address
from npuwatch.vocabulary import ShippedLevel


class ConsoleSinkSection(BaseModel):
    """Records and events written to standard output (for a first look, or journald)."""

    model_config = STRICT

    enabled: bool = Field(default=False, description="write to standard output")
    format: Literal["text", "json"] = Field(
        default="text", description='"text" for people, "json" for one JSON object a line'
    )
    events_only: bool = Field(
        default=False, description="only events (records a rule matched), not every record"
    )


class SearchSinkSection(BaseModel):
    """Records and events shipped to Elasticsearch or OpenSearch data streams
    (logs-ascend.plog-<namespace>, logs-ascend.device-<namespace>, logs-ascend.events-<namespace>).
    Secrets are never written here: the API key or password is read from a file (mode 0600) or
    from NPUWATCH_ES_API_KEY / NPUWATCH_ES_PASSWORD."""

    model_config = STRICT_AND_DISCREET

    enabled: bool = Field(default=False, description="ship the journal to the search engine")
    flavour: Literal["elasticsearch", "opensearch"] = Field(
        default="elasticsearch",
        description='"elasticsearch" (8.x, the official client) or "opensearch" (opensearch-py)',
    )
    hosts: list[str] = Field(
        default_factory=lambda: ["https://localhost:9200"],
        min_length=1,
        description="URLs of the cluster's nodes",
    )
    namespace: str = Field(
        default="default",
        description="the data streams' namespace: lower case letters, digits and _ (a cluster "
        "or an environment name)",
    )
    ca_file: Path | None = Field(
        default=None, description="CA certificate(s) to verify the engine's TLS certificate with"
    )
    verify_certificates: bool = Field(
        default=True, description="verify TLS certificates (turn off only for a lab)"
    )
    api_key_file: Path | None = Field(
        default=None, description="file holding an API key (base64 id:key, as Kibana gives it)"
    )
    username: str | None = Field(default=None, description="user for basic authentication")
    password_file: Path | None = Field(
        default=None, description="file holding that user's password"
    )
    min_level: ShippedLevel = Field(
        default="DEBUG",
        description="ship log records of this level and above; the rest stay in the local "
        "journal for `npuwatch grep` (INFO keeps a DEBUG flood out of the cluster). Records "
        "without a level, rule events, device readings and profiling operators are always "
        "shipped",
    )
    batch_documents: int = Field(
        default=2000, ge=1, le=1_000_000, description="documents in one bulk request at most"
    )
    batch_bytes: ByteSize = Field(
        default=8 << 20, ge=1 << 10, le=1 << 30, description="bytes in one bulk request at most"
    )
    max_backoff: Duration = Field(
        default=30.0,
        gt=0,
        le=86400.0,
        description="longest wait between retries while the engine is down",
    )
    timeout: Duration = Field(default=30.0, gt=0, le=3600.0, description="timeout of one request")
    delete_after: Duration = Field(
        default=30 * 86400.0,
        ge=86400.0,
        le=100 * 365 * 86400.0,
        description="`npuwatch es setup` installs a lifecycle policy that deletes data this old",
    )
    dead_letter_file: Path | None = Field(
        default=None,
        description="where refused documents are kept; relative paths are under "
        "state_directory (default dead-letter/<flavour>.jsonl)",
    )

    @field_validator("hosts", mode="before")
    @classmethod
    def _hosts_hold_no_password(cls, value: object) -> object:
        # Before any other check, whose message (or pydantic's, which repeats its input) would
        # show the password: a URL is printed by `config check`, `es check` and the sink's log.
        for text in _strings_in(value):
            if "@" in text:
                raise ValueError(
                    f"{_userinfo_hidden(text)}: a user name or password in the URL is refused "
                    "(it would be shown wherever the URL is): write the URL without it, the user "
                    "in `username`, and the password in a file named by `password_file` (mode "
                    "0600) or in NPUWATCH_ES_PASSWORD"
                )
        return value

    @field_validator("hosts")
    @classmethod
    def _hosts_are_urls(cls, value: list[str]) -> list[str]:
        for host in value:
            parts = urlsplit(host)
            example = f"https://{parts.netloc or host or 'es-1.example.internal:9200'}"
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"{host!r} is not a URL: write it as {example} (http:// without TLS)"
                )
            try:
                parts.port  # noqa: B018 - reading it checks it
            except ValueError:
                raise ValueError(f"{host!r}: the port is not a number") from None
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace_is_valid(cls, value: str) -> str:
        return check_namespace(value)


def _strings_in(value: object) -> Iterator[str]:
    """Every string in a configuration value, however nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings_in(item)


_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?.*@(?P<rest>.*)$", re.DOTALL)


def _userinfo_hidden(url: str) -> str:
    """`url` with everything between its scheme and its last `@` (a user and password) hidden."""
    match = _USERINFO.match(url)
    return f"{match['scheme'] or ''}***@{match['rest']}" if match else url


class PrometheusSinkSection(BaseModel):
    """Metrics for Prometheus at http://<host>:9816/metrics: records, errors by code and rule
    events (ascend_*), and the agent's own health (npuwatch_*)."""

    model_config = STRICT

    enabled: bool = Field(default=True, description="serve /metrics")
    listen: str = Field(
        default=":9816",
        description='address to listen on: ":9816" is every interface (Prometheus scrapes from '
        'another host), "127.0.0.1:9816" this host only, "[::1]:9816" IPv6',
    )
    web_config_file: Path | None = Field(
        default=None,
        description="TLS and basic authentication, in the format of Prometheus's web "
        "configuration file (tls_server_config, basic_auth_users)",
    )

    @field_validator("listen")
    @classmethod
    def _listen_is_an_address(cls, value: str) -> str:
        listen_address(value)
        return value


class SinksSection(BaseModel):
    """Where records and events are shipped."""

    model_config = STRICT

    console: ConsoleSinkSection = Field(default_factory=ConsoleSinkSection)
    elasticsearch: SearchSinkSection = Field(default_factory=SearchSinkSection)
    prometheus: PrometheusSinkSection = Field(default_factory=PrometheusSinkSection)
