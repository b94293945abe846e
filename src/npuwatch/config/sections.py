"""The agent's sections of the configuration: itself, its sources, rules, journal, devices,
profiling runs and debugging-tool outputs (the sinks' sections are in config/sinks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from npuwatch.config.values import ByteSize, Duration
from npuwatch.default_paths import STATE_DIRECTORY
from npuwatch.parsers.timestamps import resolve_timezone
from npuwatch.setting_values import command_words

STRICT = ConfigDict(extra="forbid", frozen=True)
STRICT_AND_DISCREET = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)
"""For the models whose validation error, printed whole (a traceback), could repeat a secret
it was given: pydantic shows the input of every error unless told not to."""


class AgentSection(BaseModel):
    """The agent process itself: its name, where it keeps state, how it stops."""

    model_config = STRICT

    host_name: str | None = Field(
        default=None,
        min_length=1,
        description="host.name put on every record; unset means this machine's host name",
        examples=["ascend-node-01"],
    )
    state_directory: Path = Field(
        default=STATE_DIRECTORY,
        description="where offsets and the journal live (systemd: StateDirectory=npuwatch)",
    )
    drain_timeout: Duration = Field(
        default=60.0,
        gt=0,
        le=3600.0,
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

    model_config = STRICT

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
    follow_links: bool = Field(
        default=False,
        description="follow links to files found under the roots; only to a regular file "
        "inside the roots owned by the link's owner (links to folders are never followed). "
        "Off: a link is skipped and said once, so that no user can make the agent read, as "
        "root, a file the link names",
    )
    watch: bool = Field(
        default=True,
        description="notice new, moved and deleted files at once through inotify (growth of open "
        "files is seen by the reading rounds, of closed ones by the rescan); the periodic rescan "
        "runs either way",
    )
    rescan_interval: Duration = Field(
        default=10.0,
        gt=0,
        le=86400.0,
        description="how often the roots are walked for new and grown files",
    )
    idle_flush: Duration = Field(
        default=5.0,
        gt=0,
        le=3600.0,
        description="a record still being assembled (multi-line, or a last line without a "
        "newline) is flushed once its file has been idle this long",
    )
    idle_close: Duration = Field(
        default=60.0,
        gt=0,
        le=7 * 86400.0,
        description="an open file not written for this long is closed, and reopened by its "
        "identity when it grows",
    )
    deleted_grace: Duration = Field(
        default=30.0,
        gt=0,
        le=86400.0,
        description="a deleted file still open is read to its end, then closed within this time",
    )
    max_open_files: int = Field(default=256, ge=1, le=65536, description="files held open at once")
    read_chunk_bytes: ByteSize = Field(
        default=1 << 20,
        ge=4 << 10,
        le=64 << 20,
        description="bytes read from a file at a time (at least 4KiB)",
    )
    max_line_bytes: ByteSize = Field(
        default=64 << 10,
        ge=1 << 10,
        le=64 << 20,
        description="a longer line is cut at this size (at least 1KiB)",
    )
    max_record_lines: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description="a multi-line record is cut after this many lines",
    )
    max_record_bytes: ByteSize = Field(
        default=1 << 20,
        ge=1 << 10,
        le=1 << 30,
        description="a multi-line record is cut at this size",
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
        le=64 << 30,
        description="log text read but not yet in the journal is held in memory up to this "
        "size (as parsed records it takes about four times as much); beyond it reading pauses",
    )


class RulesSection(BaseModel):
    """The rule packs that turn records into events."""

    model_config = STRICT

    builtin: bool = Field(default=True, description="use the packs shipped with npuwatch")
    paths: list[Path] = Field(
        default=[], description="more rule packs: YAML files, or folders of *.yaml"
    )
    reload_interval: Duration = Field(
        default=5.0, gt=0, le=86400.0, description="how often rule files are checked for changes"
    )


class DevicesSection(BaseModel):
    """Device telemetry: `npu-smi info` polled into ascend_npu_* gauges and journal entries."""

    model_config = STRICT

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
        default=30.0,
        ge=1,
        le=86400.0,
        description="how often npu-smi is run (it takes ~1 s on 8 cards)",
    )
    timeout: Duration = Field(
        default=10.0,
        gt=0,
        le=3600.0,
        description="a run taking longer counts as failed (a hung device)",
    )
    journal: bool = Field(
        default=True,
        description="write each reading to the journal as device entries (shipped to "
        "logs-ascend.device-<namespace>, next to the logs of the same minute)",
    )

    @field_validator("npu_smi_command")
    @classmethod
    def _command_is_not_empty(cls, value: str) -> str:
        command_words(value)
        return value


class ProfilingSection(BaseModel):
    """Profiling runs (msprof PROF_* folders, torch_npu *_ascend_pt folders) imported by the
    agent once complete: their operators into the journal (logs-ascend.profiling-<namespace>)
    and operator, step and AI Core figures into ascend_op_* and ascend_profiling_* gauges."""

    model_config = STRICT

    paths: list[Path] = Field(
        default=[],
        description="folders profiling runs are written to (the torch_npu profiler's "
        "dir_name, msprof's --output); every run found under them is imported once",
        examples=[["/data/profiling"]],
    )
    settle: Duration = Field(
        default=60.0,
        gt=0,
        le=7 * 86400.0,
        description="a run is complete when it has analyse.done, or when none of its files "
        "changed for this long",
    )
    scan_interval: Duration = Field(
        default=30.0,
        gt=0,
        le=86400.0,
        description="how often the folders are searched for new runs",
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


class DebugToolsSection(BaseModel):
    """Outputs of Ascend's debugging tools (msprobe compare, overflow check and monitor,
    msSanitizer, msaicerr) imported by the agent once complete: their findings into the journal
    (logs-ascend.debug-<namespace>), rule events, and ascend_precision_* / ascend_monitor_* /
    ascend_sanitizer_* metrics."""

    model_config = STRICT

    paths: list[Path] = Field(
        default=[],
        description="folders the tools write to (msprobe's -o, $MONITOR_OUTPUT_DIR, "
        "msSanitizer's --log-file folder, msaicerr's -out); every output found under them is "
        "imported once, and again when it is written again",
        examples=[["/data/debug"]],
    )
    settle: Duration = Field(
        default=60.0,
        gt=0,
        le=7 * 86400.0,
        description="an output is complete when none of its files changed for this long (the "
        "tools write no end marker); a training monitor's folder is imported again each time "
        "it settled after growing",
    )
    scan_interval: Duration = Field(
        default=30.0,
        gt=0,
        le=86400.0,
        description="how often the folders are searched for new outputs",
    )


class JournalSection(BaseModel):
    """The local journal (SQLite segments) that every record is written to before shipping."""

    model_config = STRICT

    path: Path | None = Field(
        default=None,
        description="folder of the journal; unset means <state_directory>/journal, and a "
        "relative path is taken under state_directory",
        examples=["/var/lib/npuwatch/journal"],
    )
    max_age: Duration = Field(
        default=30 * 86400.0,
        gt=0,
        le=10 * 365 * 86400.0,
        description="segments older than this are deleted",
    )
    max_bytes: ByteSize = Field(
        default=10 << 30,
        gt=0,
        le=1 << 50,
        description="the oldest segments are deleted while the journal is larger than this",
    )
    segment_bytes: ByteSize = Field(
        default=256 << 20,
        gt=0,
        le=64 << 30,
        description="a segment is closed and a new one started beyond this size, and at each "
        "UTC day",
    )
    commit_interval: Duration = Field(
        default=0.5,
        gt=0,
        le=600.0,
        description="group commit: what was read is written together this often (or at 4 MiB); "
        "each commit is a transaction and an fsync, so shorter costs CPU on a quiet host",
    )
    sync: Literal["full", "normal"] = Field(
        default="full",
        description='"full" fsyncs every commit and survives power loss; "normal" survives a '
        "killed agent only",
    )


class CollectiveSection(BaseModel):
    """What the cluster correlator needs: topology facts, collective failures, heartbeats.

    Read from every record the agent reads, whatever the sinks' min_level, journaled, and
    shipped to logs-ascend.topology-<namespace> (one document per process and communicator, and
    a heartbeat) and logs-ascend.events-<namespace> (`npuwatch correlate` reads them)."""

    model_config = STRICT

    enabled: bool = Field(
        default=True, description="extract and ship what the cluster correlator needs"
    )
    heartbeat_interval: Duration = Field(
        default=30.0,
        ge=1,
        le=86400.0,
        description="how often the heartbeat says this agent is alive and which processes "
        "still write (the correlator tells a silent process from a host without data by it)",
    )
