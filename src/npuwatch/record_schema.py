"""The published record schema: the pydantic model of the document `Record.to_document()` makes.

`npuwatch schema` prints its JSON Schema; the search-engine mappings are generated from it
(sinks/search/templates.py); tests validate documents against it. Nothing on the per-line path
imports it (see records.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from npuwatch.records import FLAG_NAMES, LogChannel, LogKind, TelemetryKind

# --- the published schema -------------------------------------------------------------------

_CODE_PATTERN = r"^[EW][0-9A-Z][0-9]{4}$"


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class OriginFile(_Schema):
    name: str | None = Field(None, description="Source file that wrote the record.")
    line: int | None = Field(None, description="Source line that wrote the record.")


class Origin(_Schema):
    file: OriginFile | None = None
    function: str | None = Field(None, description="Function that wrote the record.")


class LogFile(_Schema):
    path: str | None = Field(None, description="The log file the record was read from.")


class Log(_Schema):
    level: str | None = Field(
        None, description="DEBUG, INFO, WARNING, ERROR, EVENT, TRACE, OPLOG, NULL, ..."
    )
    logger: str | None = Field(None, description="The CANN module: GE, RUNTIME, HCCL, ...")
    offset: int | None = Field(None, ge=0, description="Byte offset of the record in the file.")
    file: LogFile | None = None
    origin: Origin | None = None


class Thread(_Schema):
    id: int | None = None


class Process(_Schema):
    pid: int | None = Field(None, description="Process id; firmware writes -1 and -2.")
    name: str | None = Field(None, description="Process name as CANN printed it (may be empty).")
    thread: Thread | None = None


class Error(_Schema):
    code: str | None = Field(
        None, pattern=_CODE_PATTERN, description="Primary six-character CANN code, e.g. E30009."
    )


class Event(_Schema):
    original: str = Field(description="The exact raw text of the record, all its lines.")
    kind: Literal["alert"] | None = Field(None, description="`alert` for rule events.")
    severity: int | None = Field(None, ge=1, le=4, description="4 critical ... 1 info.")


class RuleRef(_Schema):
    id: str
    name: str
    category: str
    ruleset: str


class FindingContext(_Schema):
    before: list[str]
    after: list[str]
    lost: bool | None = Field(
        None,
        description="The context's records were no longer in the journal when the event was "
        "read (retention removed them first): before and after are empty.",
    )


class Finding(_Schema):
    severity: Literal["critical", "error", "warning", "info"]
    layer: str
    advice: str
    count: int = Field(ge=1, description="Matches within the rule's dedupe window.")
    symptom: bool
    first: AwareDatetime | None = None
    last: AwareDatetime | None = None
    fields: dict[str, str] | None = Field(None, description="Values the rule extracted.")
    context: FindingContext


class Host(_Schema):
    name: str | None = None


class AscendFile(_Schema):
    pid: int | None = Field(None, description="Process id from the file name.")
    created: AwareDatetime | None = Field(None, description="Creation time from the file name.")


class NpuMemory(_Schema):
    used_bytes: int | None = Field(None, ge=0)
    total_bytes: int | None = Field(None, ge=0)


class NpuProcessEntry(_Schema):
    pid: int
    name: str
    memory_bytes: int | None = Field(None, ge=0)
    container_pid: int | None = None


class NpuReading(_Schema):
    """One chip as one `npu-smi info` call reported it (device entries only)."""

    id: int = Field(description="NPU id, as npu-smi numbers the cards.")
    chip: int = Field(description="Chip (die) id on the NPU.")
    name: str = Field(description="Chip name: 910B3, Ascend910, 310P3, ...")
    health: str = Field(description="OK, Warning, Alarm, Critical, ...")
    power_watts: float | None = None
    temperature_celsius: float | None = None
    aicore_ratio: float | None = Field(None, ge=0, description="AI Core busy, 0 to 1.")
    hbm: NpuMemory | None = None
    memory: NpuMemory | None = None
    bus_id: str | None = None
    device_id: int | None = Field(None, description="Logic id (inference cards).")
    phy_id: int | None = Field(None, description="Physical id (A3 servers).")
    processes: list[NpuProcessEntry] | None = None
    driver_version: str | None = None


class ProfilingOperator(_Schema):
    """One operator of an imported profiling run, summed over the run (profiling entries)."""

    run: str = Field(description="The profiling run's folder name.")
    name: str = Field(description="Operator (kernel) name.")
    type: str | None = Field(None, description="Operator type: MatMulV2, Cast, ...")
    task_type: str | None = Field(None, description="AI_CORE, AI_VECTOR_CORE, HCCL, ...")
    count: int = Field(ge=0, description="Launches in the run.")
    total_us: float = Field(ge=0, description="Summed duration, microseconds.")
    avg_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None


class Ascend(_Schema):
    kind: LogKind | TelemetryKind | None = None
    channel: LogChannel | None = None
    device: int | None = Field(None, description="NPU (logical) id.")
    rank: int | None = Field(None, description="Rank in the collective job.")
    error_codes: list[str] | None = Field(
        None, description="Every six-character CANN code in the record, primary first."
    )
    runtime_codes: list[int] | None = Field(
        None, description="Numeric ACL/runtime codes such as 507035 or 107020."
    )
    framework_code: str | None = Field(
        None, pattern=r"^ERR[0-9]{5}$", description="torch_npu code such as ERR02200."
    )
    tags: list[str] | None = Field(
        None, description="Phase and stage tags: [INIT][DEFAULT], [InitChannelStage], ..."
    )
    submodule: str | None = Field(None, description="Sub-module tag, e.g. devmm, hdc.")
    format: str = Field(description="Which line format the record was read as.")
    flags: list[Literal[tuple(FLAG_NAMES)]] | None = None  # type: ignore[valid-type]
    encoding: Literal["gbk", "utf-8-escaped"] | None = Field(
        None, description="How bytes that were not UTF-8 were decoded."
    )
    lines: int = Field(1, ge=1, description="Physical lines in the record.")
    end_offset: int | None = Field(None, ge=0, description="Byte offset just after the record.")
    file: AscendFile | None = None
    finding: Finding | None = Field(None, description="What a rule found (events only).")
    npu: NpuReading | None = Field(None, description="A device reading (npu-smi entries).")
    profiling: ProfilingOperator | None = Field(
        None, description="An operator of a profiling run (profiling entries)."
    )


class LogRecord(_Schema):
    """One log event in ECS form: the document npuwatch writes and ships."""

    timestamp: AwareDatetime | None = Field(
        None, alias="@timestamp", description="When it was written, in UTC."
    )
    message: str
    log: Log
    process: Process | None = None
    error: Error | None = None
    event: Event
    host: Host | None = None
    rule: RuleRef | None = None
    ascend: Ascend


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a record document, with ECS names."""
    return LogRecord.model_json_schema(by_alias=True)
