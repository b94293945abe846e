"""The agent's configuration: what an operator may write in npuwatch.toml, and its defaults.

The models describe the file and nothing else; `load_config` reads it, lays environment
overrides over it and validates everything once, so that the runtime never re-checks a value.
Every problem names its source (the file or the environment variable), the key and what was
expected. `example_config` writes the whole file with every default, explained.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from npuwatch.config_example import commented_toml
from npuwatch.config_sources import (
    ConfigError,
    ConfigProblem,
    ConfigUnreadable,
    load_model,
)
from npuwatch.parsers.timestamps import resolve_timezone
from npuwatch.quantities import format_bytes, format_duration, parse_byte_size, parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds, written in configuration as a number or as "200ms", "10s", "5m", "1h", "30d"."""

ByteSize = Annotated[int, BeforeValidator(parse_byte_size)]
"""Bytes, written in configuration as an int or as "64KiB", "64KB", "1 MiB", "10GiB"."""

__all__ = [
    "CONFIG_PATH_VARIABLE",
    "DEFAULT_CONFIG_PATH",
    "AgentSection",
    "ByteSize",
    "Config",
    "ConfigError",
    "ConfigProblem",
    "ConfigUnreadable",
    "ConsoleSinkSection",
    "DevicesSection",
    "Duration",
    "JournalSection",
    "ProfilingSection",
    "RulesSection",
    "SinksSection",
    "SourcesSection",
    "config_path_from",
    "example_config",
    "format_bytes",
    "format_duration",
    "load_config",
]

DEFAULT_CONFIG_PATH = Path("/etc/npuwatch/npuwatch.toml")
CONFIG_PATH_VARIABLE = "NPUWATCH_CONFIG"

_STRICT = ConfigDict(extra="forbid", frozen=True)
_STRICT_AND_DISCREET = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
"""For the models whose validation error, printed whole (a traceback), could repeat a secret
it was given: pydantic shows the input of every error unless told not to."""


class AgentSection(BaseModel):
    """The agent process itself: its name, where it keeps state, how it stops."""

    model_config = _STRICT

    host_name: str | None = Field(
        default=None,
        min_length=1,
        description="host.name put on every record; unset means this machine's host name",
        examples=["ascend-node-01"],
    )
    state_directory: Path = Field(
        default=Path("/var/lib/npuwatch"),
        description="where offsets and the journal live (systemd: StateDirectory=npuwatch)",
    )
    drain_timeout: Duration = Field(
        default=60.0,
        gt=0,
        description="on SIGTERM, how long to drain queues and commit before giving up; keep it "
        "below the unit's TimeoutStopSec (90s)",
    )
    timezone: str = Field(
        default="local",
        description="zone that CANN's local timestamps are written in: an IANA name such as "
        'Asia/Shanghai, or "local" for this host\'s zone',
    )

    @field_validator("timezone")
    @classmethod
    def _zone_is_known(cls, value: str) -> str:
        resolve_timezone(value)  # raises ValueError naming the zone and what to write instead
        return value


class SourcesSection(BaseModel):
    """Which log files are followed, and how they are read."""

    model_config = _STRICT

    roots: list[Path] = Field(
        default=[],
        description="folders to follow; empty means discover: $ASCEND_PROCESS_LOG_PATH, "
        "~/ascend/log of each of `users`, and /var/log/npu/slog, those that exist",
    )
    users: list[str] = Field(
        default=["root"],
        description="whose ~/ascend/log to follow when roots is empty",
    )
    include: list[str] = Field(
        default=["*.log", "*.log.*", "slogdlog*"],
        description="shell patterns on the file name of the files to follow",
    )
    exclude: list[str] = Field(
        default=[],
        description="shell patterns on the path relative to its root, and on the name, of "
        "files to leave out; exclude wins over include",
    )
    watch: bool = Field(
        default=True,
        description="notice new, moved and deleted files at once through inotify (growth of open "
        "files is seen by the reading rounds, of closed ones by the rescan); the periodic rescan "
        "runs either way",
    )
    rescan_interval: Duration = Field(
        default=10.0, gt=0, description="how often the roots are walked for new and grown files"
    )
    idle_flush: Duration = Field(
        default=5.0,
        gt=0,
        description="a record still being assembled (multi-line, or a last line without a "
        "newline) is flushed once its file has been idle this long",
    )
    idle_close: Duration = Field(
        default=60.0,
        gt=0,
        description="an open file not written for this long is closed, and reopened by its "
        "identity when it grows",
    )
    deleted_grace: Duration = Field(
        default=30.0,
        gt=0,
        description="a deleted file still open is read to its end, then closed within this time",
    )
    max_open_files: int = Field(default=256, ge=1, description="files held open at once")
    read_chunk_bytes: ByteSize = Field(
        default=1 << 20, ge=4 << 10, description="bytes read from a file at a time (at least 4KiB)"
    )
    max_line_bytes: ByteSize = Field(
        default=64 << 10,
        ge=1 << 10,
        description="a longer line is cut at this size (at least 1KiB)",
    )
    max_record_lines: int = Field(
        default=1000, ge=1, description="a multi-line record is cut after this many lines"
    )
    max_record_bytes: ByteSize = Field(
        default=1 << 20, ge=1 << 10, description="a multi-line record is cut at this size"
    )
    fingerprint_bytes: int = Field(
        default=256,
        ge=16,
        le=4096,
        description="bytes at the start of a file hashed into its identity (16 to 4096), so "
        "that a rotated or replaced file is told apart from the one it replaced; as many of the "
        "bytes last read are checked before an offset is taken up again",
    )
    queue_bytes: ByteSize = Field(
        default=16 << 20,
        ge=1 << 20,
        description="log text read but not yet in the journal is held in memory up to this "
        "size (as parsed records it takes about four times as much); beyond it reading pauses",
    )


class RulesSection(BaseModel):
    """The rule packs that turn records into events."""

    model_config = _STRICT

    builtin: bool = Field(default=True, description="use the packs shipped with npuwatch")
    paths: list[Path] = Field(
        default=[], description="more rule packs: YAML files, or folders of *.yaml"
    )
    reload_interval: Duration = Field(
        default=5.0, gt=0, description="how often rule files are checked for changes"
    )


class DevicesSection(BaseModel):
    """Device telemetry: `npu-smi info` polled into ascend_npu_* gauges and journal entries."""

    model_config = _STRICT

    enabled: bool = Field(
        default=True,
        description="poll npu-smi; on a host without it polling turns itself off with one log line",
    )
    npu_smi_command: str = Field(
        default="npu-smi info",
        description="the command to run, split like a shell would (a full path when npu-smi "
        "is not on the agent's PATH, e.g. /usr/local/sbin/npu-smi info)",
    )
    interval: Duration = Field(
        default=30.0, ge=1, description="how often npu-smi is run (it takes ~1 s on 8 cards)"
    )
    timeout: Duration = Field(
        default=10.0, gt=0, description="a run taking longer counts as failed (a hung device)"
    )
    journal: bool = Field(
        default=True,
        description="write each reading to the journal as device entries (shipped to "
        "logs-ascend.device-<namespace>, next to the logs of the same minute)",
    )

    @field_validator("npu_smi_command")
    @classmethod
    def _command_is_not_empty(cls, value: str) -> str:
        from npuwatch.collector.npu_smi_command import split_command  # noqa: PLC0415

        split_command(value)
        return value


class ProfilingSection(BaseModel):
    """Profiling runs (msprof PROF_* folders, torch_npu *_ascend_pt folders) imported by the
    agent once complete: their operators into the journal (logs-ascend.profiling-<namespace>)
    and operator, step and AI Core figures into ascend_op_* and ascend_profiling_* gauges."""

    model_config = _STRICT

    paths: list[Path] = Field(
        default=[],
        description="folders profiling runs are written to (the torch_npu profiler's "
        "dir_name, msprof's --output); every run found under them is imported once",
        examples=[["/data/profiling"]],
    )
    settle: Duration = Field(
        default=60.0,
        gt=0,
        description="a run is complete when it has analyse.done, or when none of its files "
        "changed for this long",
    )
    scan_interval: Duration = Field(
        default=30.0, gt=0, description="how often the folders are searched for new runs"
    )
    top_operator_types: int = Field(
        default=20,
        ge=1,
        le=200,
        description="operator types exported as ascend_op_duration_seconds{op_type} (the "
        "slowest ones of the latest run; a bound on the series Prometheus stores)",
    )
    journal: bool = Field(
        default=True, description="write the operators of each imported run to the journal"
    )


class JournalSection(BaseModel):
    """The local journal (SQLite segments) that every record is written to before shipping."""

    model_config = _STRICT

    path: Path | None = Field(
        default=None,
        description="folder of the journal; unset means <state_directory>/journal, and a "
        "relative path is taken under state_directory",
        examples=["/var/lib/npuwatch/journal"],
    )
    max_age: Duration = Field(
        default=30 * 86400.0, gt=0, description="segments older than this are deleted"
    )
    max_bytes: ByteSize = Field(
        default=10 << 30,
        gt=0,
        description="the oldest segments are deleted while the journal is larger than this",
    )
    segment_bytes: ByteSize = Field(
        default=256 << 20,
        gt=0,
        description="a segment is closed and a new one started beyond this size, and at each "
        "UTC day",
    )
    commit_interval: Duration = Field(
        default=0.5,
        gt=0,
        description="group commit: what was read is written together this often (or at 4 MiB); "
        "each commit is a transaction and an fsync, so shorter costs CPU on a quiet host",
    )
    sync: Literal["full", "normal"] = Field(
        default="full",
        description='"full" fsyncs every commit and survives power loss; "normal" survives a '
        "killed agent only",
    )


class ConsoleSinkSection(BaseModel):
    """Records and events written to standard output (for a first look, or journald)."""

    model_config = _STRICT

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

    model_config = _STRICT_AND_DISCREET

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
    min_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="DEBUG",
        description="ship log records of this level and above; the rest stay in the local "
        "journal for `npuwatch grep` (INFO keeps a DEBUG flood out of the cluster). Records "
        "without a level, rule events, device readings and profiling operators are always "
        "shipped",
    )
    batch_documents: int = Field(
        default=2000, ge=1, description="documents in one bulk request at most"
    )
    batch_bytes: ByteSize = Field(
        default=8 << 20, ge=1 << 10, description="bytes in one bulk request at most"
    )
    max_backoff: Duration = Field(
        default=30.0, gt=0, description="longest wait between retries while the engine is down"
    )
    timeout: Duration = Field(default=30.0, gt=0, description="timeout of one request")
    delete_after: Duration = Field(
        default=30 * 86400.0,
        ge=86400.0,
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
        from npuwatch.sinks.elasticsearch.streams import check_namespace  # noqa: PLC0415

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

    model_config = _STRICT

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
        from npuwatch.sinks.prometheus.exporter import parse_listen_address  # noqa: PLC0415

        parse_listen_address(value)
        return value


class SinksSection(BaseModel):
    """Where records and events are shipped."""

    model_config = _STRICT

    console: ConsoleSinkSection = Field(default_factory=ConsoleSinkSection)
    elasticsearch: SearchSinkSection = Field(default_factory=SearchSinkSection)
    prometheus: PrometheusSinkSection = Field(default_factory=PrometheusSinkSection)


class Config(BaseModel):
    """The whole configuration file."""

    model_config = _STRICT_AND_DISCREET

    agent: AgentSection = Field(default_factory=AgentSection)
    sources: SourcesSection = Field(default_factory=SourcesSection)
    rules: RulesSection = Field(default_factory=RulesSection)
    journal: JournalSection = Field(default_factory=JournalSection)
    devices: DevicesSection = Field(default_factory=DevicesSection)
    profiling: ProfilingSection = Field(default_factory=ProfilingSection)
    sinks: SinksSection = Field(default_factory=SinksSection)

    def journal_path(self) -> Path:
        """The journal folder: journal.path (under state_directory when relative), else
        <state_directory>/journal."""
        return self.agent.state_directory / (self.journal.path or "journal")


_EXAMPLE_HEADER = (
    "npuwatch agent configuration, with every key at its default value.",
    "",
    "Put it at /etc/npuwatch/npuwatch.toml (or point NPUWATCH_CONFIG at it), keep only what you",
    "change, and run `npuwatch config check`. Without a file the agent runs with these defaults.",
    "Any key can also be set in the environment as NPUWATCH_<SECTION>__<KEY>, which wins over",
    "this file: NPUWATCH_JOURNAL__MAX_AGE=7d, NPUWATCH_SOURCES__ROOTS='[\"/data/log\"]'.",
    "Durations: 200ms, 10s, 5m, 1h, 30d, 1h30m. Sizes: 512, 64KiB, 1MiB, 10GiB (KB = 1000 bytes).",
)


def config_path_from(environ: Mapping[str, str]) -> Path | None:
    """The configuration file named by $NPUWATCH_CONFIG, or None when it is not set."""
    value = environ.get(CONFIG_PATH_VARIABLE)
    return Path(value) if value else None


def load_config(path: Path | None, environ: Mapping[str, str]) -> Config:
    """The validated configuration from the file at `path` and NPUWATCH_* variables in
    `environ`, which win over the file.

    With `path` None, /etc/npuwatch/npuwatch.toml is read when it exists, and the defaults are
    used when it does not. Raises ConfigUnreadable when a file cannot be read (or `path` does
    not exist), ConfigError with every problem when the configuration is wrong.
    """
    if path is None and DEFAULT_CONFIG_PATH.exists():
        path = DEFAULT_CONFIG_PATH
    return load_model(Config, path, environ)


def example_config() -> str:
    """A complete configuration file: every table and key at its default, each explained."""
    return commented_toml(Config, _EXAMPLE_HEADER)
