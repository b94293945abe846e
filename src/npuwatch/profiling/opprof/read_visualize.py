"""msOpProf's visualize_data.bin: its blocks listed, OpBasicInfo (with msOpProf's advice) and the
Trace decoded.

The file (written by both `msprof op` and `msprof op simulator`, for MindStudio Insight) is a
sequence of appended blocks. Each starts with a packed 12-byte little-endian header: u64
contentSize (payload bytes, padding included), u8 type, u8 padding (0-3 trailing NULs), u8
version (0x5A, 0 for InstrApi), u8 reserved. A Code block (type 1) puts a 4096-byte NUL-padded
source path between the header and the source text; every other payload is compact JSON.

Of the payloads, OpBasicInfo (type 5: the launch's name, chip, block dims, frequencies and
msOpProf's own `advice[]`) and Trace (type 2: the trace.json document, read by `read_trace`)
are decoded, the Code blocks named by their path, and the other kinds listed by name. A size
is checked against what is left of the file before anything is read, so a damaged or cut-short
file ends the read with a problem and never with an exception or a huge allocation.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from npuwatch.json_input import load_json
from npuwatch.profiling.opprof.read_comm import number
from npuwatch.profiling.opprof.read_trace import OpTrace, parse_trace
from npuwatch.untrusted_files import open_binary

HEADER = struct.Struct("<QBBBB")
"""contentSize, type, padding, version, reserved: `#pragma pack(4)`, 12 bytes."""
PATH_MAX = 4096
CODE, TRACE, BASIC_INFO = 1, 2, 5
BLOCK_TYPES = {
    1: "Code", 2: "Trace", 3: "FileApi", 4: "InstrApi", 5: "OpBasicInfo",
    6: "ComputeLoadFigure", 7: "ComputeLoadTable", 8: "StorageAccessHeatMap",
    9: "StorageAccessTable", 0xC: "OccupancyMap", 0xD: "RoofLine", 0xE: "CacheLineHeatMap",
    0xF: "TopStallReason",
}  # fmt: skip
VERSIONS = frozenset({0x5A, 0})
_DECODED = frozenset({CODE, TRACE, BASIC_INFO})


@dataclass(frozen=True)
class VisualBlock:
    """One block of the file: where it starts, its kind and its payload size."""

    offset: int
    kind: int
    name: str
    size: int
    version: int


@dataclass(frozen=True)
class SourceFile:
    """A Code block: the kernel source msOpProf kept, by path."""

    path: str
    lines: int


@dataclass(frozen=True)
class VisualBasicInfo:
    """The OpBasicInfo block: OpBasicInfo.csv's facts, the chip, and msOpProf's advice."""

    name: str | None
    soc: str | None
    op_type: str | None
    block_dim: int | None
    mix_block_dim: int | None
    device_id: int | None
    pid: int | None
    duration_us: float | None
    current_freq_mhz: float | None
    rated_freq_mhz: float | None
    detail_columns: tuple[str, ...]
    """`block_detail` (or `mix_block_detail`) `head_name`: the per-block table's columns."""
    detail_rows: int
    advice: tuple[str, ...]


@dataclass(frozen=True)
class VisualizeData:
    """What one visualize_data.bin holds."""

    source: str
    blocks: tuple[VisualBlock, ...]
    basic: VisualBasicInfo | None
    trace: OpTrace | None
    code: tuple[SourceFile, ...]
    complete: bool
    """False when a damaged block ended the read before the end of the file."""

    def kinds(self) -> list[str]:
        """The kinds of block present, each once, in file order."""
        return list(dict.fromkeys(block.name for block in self.blocks))


def read_visualize(path: Path, problems: list[str]) -> VisualizeData | None:
    """The blocks of `path` up to the end or the first damaged one; None when unreadable."""
    try:
        with open_binary(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            return _read_blocks(handle, size, str(path), problems)
    except OSError as failure:
        problems.append(f"{path}: cannot read ({failure.strerror or failure})")
        return None


def _read_blocks(handle: BinaryIO, size: int, source: str, problems: list[str]) -> VisualizeData:
    blocks: list[VisualBlock] = []
    basic: VisualBasicInfo | None = None
    trace: OpTrace | None = None
    code: list[SourceFile] = []
    offset, complete = 0, True
    while offset < size:
        where = f"{source}: block {len(blocks) + 1} at byte {offset}"
        head = handle.read(HEADER.size)
        if len(head) < HEADER.size:
            problems.append(f"{where}: header cut short ({len(head)} of {HEADER.size} bytes)")
            complete = False
            break
        content, kind, padding, version, _reserved = HEADER.unpack(head)
        name = BLOCK_TYPES.get(kind, f"type {kind}")
        extra = PATH_MAX if kind == CODE else 0
        left = size - offset - HEADER.size
        if content + extra > left:
            problems.append(
                f"{where} ({name}): contentSize {content} exceeds the {left} bytes left in the "
                "file; rest of the file skipped"
            )
            complete = False
            break
        if kind not in BLOCK_TYPES:
            problems.append(f"{where}: unknown block type {kind}; skipped")
        if version not in VERSIONS:
            problems.append(f"{where} ({name}): version {version:#x}, not 0x5a; read anyway")
        blocks.append(VisualBlock(offset, kind, name, content, version))
        if kind in _DECODED:
            payload = handle.read(extra + content)
            body = payload[extra : len(payload) - min(padding, content)].rstrip(b"\0")
            text = body.decode("utf-8", errors="replace")
            if kind == CODE:
                path = payload[:extra].split(b"\0", 1)[0].decode("utf-8", errors="replace")
                code.append(SourceFile(path, len(text.splitlines())))
            elif kind == TRACE:
                trace = parse_trace(text, f"{where} (Trace)", problems) or trace
            else:
                basic = _basic_info(text, where, problems) or basic
        else:
            handle.seek(extra + content, 1)
        offset += HEADER.size + extra + content
    return VisualizeData(source, tuple(blocks), basic, trace, tuple(code), complete)


def _basic_info(text: str, where: str, problems: list[str]) -> VisualBasicInfo | None:
    try:
        document: Any = load_json(text)
    except json.JSONDecodeError as failure:
        problems.append(f"{where} (OpBasicInfo): not JSON ({failure.msg}); skipped")
        return None
    if not isinstance(document, dict):
        problems.append(f"{where} (OpBasicInfo): not a JSON object; skipped")
        return None
    detail = document.get("block_detail") or document.get("mix_block_detail") or {}
    detail = detail if isinstance(detail, dict) else {}
    columns, rows = detail.get("head_name"), detail.get("row")
    advice = document.get("advice")
    return VisualBasicInfo(
        name=_text(document.get("name")),
        soc=_text(document.get("soc")),
        op_type=_text(document.get("op_type")),
        block_dim=_whole(document.get("block_dim")),
        mix_block_dim=_whole(document.get("mix_block_dim")),
        device_id=_whole(document.get("device_id")),
        pid=_whole(document.get("pid")),
        duration_us=number(document.get("duration")),
        current_freq_mhz=number(document.get("cur_freq")),
        rated_freq_mhz=number(document.get("rated_freq")),
        detail_columns=tuple(map(str, columns)) if isinstance(columns, list) else (),
        detail_rows=len(rows) if isinstance(rows, list) else 0,
        advice=tuple(_advice(item) for item in advice) if isinstance(advice, list) else (),
    )


def _text(value: object) -> str | None:
    """A JSON string or number as text; None for null, empty, NA."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text if text not in ("", "NA", "N/A") else None


def _whole(value: object) -> int | None:
    found = number(value)
    return int(found) if found is not None and found.is_integer() else None


def _advice(item: object) -> str:
    """An advice entry as one line: a string as is, anything else as compact JSON."""
    if isinstance(item, str):
        return " ".join(item.split())
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))
