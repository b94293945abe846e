"""The text tables that `npu-smi info` prints: version, two rows per chip, and the process table.

Column widths change between driver versions and Huawei's own docs are not aligned, so rows are
read by splitting on `|` and then on whitespace, never by offsets (formats doc npu_smi.md §0).
Each chip row is recognised by its content (a Bus-Id in the second cell marks the second row of
a chip), and the header rows, when present, say which optional columns to expect. Text outside
the table (`$ npu-smi info`, `NPU:` labels) is ignored; a table row that cannot be read becomes
a `Problem`, never an exception.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from npuwatch.bounded_numbers import fits, fitting_int

MIB = 1 << 20
"""npu-smi's `MB` columns are binary megabytes: HBM total reads 65536 for a 64 GiB card."""

UNKNOWN_VALUES = frozenset({"-", "NA"})
"""How npu-smi writes a value it cannot read (A3's second die shows Power `-`, 310P3 `NA`)."""

_VERSION = re.compile(r"npu-smi\s+(?P<tool>\S+)\s+Version:\s*(?P<driver>\S+)")
_NO_PROCESSES = re.compile(r"No running processes found in NPU\s+(?P<npu>\d+)")
_BUS_ID = re.compile(r"[0-9A-Fa-fx]+:[0-9A-Fa-fx]+:[0-9A-Fa-fx]+\.[0-9A-Fa-fx]+")
# `used / total` in any spacing (`3397 / 65536`, `41697/ 65536`) becomes one `used/total` token.
_SLASH = re.compile(r"\s*/\s*")
_BORDER_CHARS = frozenset("+-=")


@dataclass(frozen=True)
class NpuChip:
    """One chip (die) of one NPU, as its two table rows describe it, in base units."""

    npu_id: int
    chip_id: int
    name: str
    health: str
    power_watts: float | None
    temperature_celsius: float | None
    hugepages_used: int | None
    hugepages_total: int | None
    bus_id: str
    aicore_ratio: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    hbm_used_bytes: int | None
    hbm_total_bytes: int | None
    device_id: int | None
    """The `Device` column of inference cards (the logic id used by ACL); None without a header."""
    phy_id: int | None
    """The `Phy-ID` column of A3 servers; None when the table has no header row."""

    @property
    def healthy(self) -> bool:
        """Whether npu-smi reports `OK`; every other status (`Warning`, `Alarm`…) is degraded."""
        return self.health == "OK"


@dataclass(frozen=True)
class NpuProcess:
    """One row of the process table: a process holding memory on one chip."""

    npu_id: int
    chip_id: int
    pid: int
    name: str
    memory_bytes: int | None
    container_pid: int | None
    """The `Process id in container` column of newer drivers (25.x and later), when known."""


@dataclass(frozen=True)
class Problem:
    """A table line that could not be read, with its 1-based line number and why."""

    line_number: int
    text: str
    reason: str


@dataclass(frozen=True)
class NpuSmiReport:
    """Everything read from one `npu-smi info` output."""

    npu_smi_version: str | None
    driver_version: str | None
    chips: tuple[NpuChip, ...]
    processes: tuple[NpuProcess, ...]
    npus_without_processes: tuple[int, ...]
    problems: tuple[Problem, ...]


class _Malformed(ValueError):
    """A row whose cells do not have the shape npu-smi prints."""


@dataclass
class _Layout:
    """What the header rows promised; `None` means no header was seen, so the row decides."""

    has_hugepages: bool | None = None
    has_hbm: bool | None = None
    second_id: str | None = None  # "device", "phy" or "" (no second id column)
    has_container_pid: bool = False


@dataclass
class _FirstRow:
    line_number: int
    text: str
    npu_id: int
    name: str
    health: str
    power_watts: float | None
    temperature_celsius: float | None
    hugepages: tuple[int | None, int | None]


@dataclass
class _State:
    layout: _Layout = field(default_factory=_Layout)
    in_processes: bool = False
    pending: _FirstRow | None = None
    version: tuple[str, str] | None = None
    chips: list[NpuChip] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)
    idle_npus: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def parse_npu_smi(text: str) -> NpuSmiReport:
    """Read the tables of one `npu-smi info` output; unreadable rows are reported as problems."""
    state = _State()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.startswith("|"):
            if line and set(line) <= _BORDER_CHARS:
                continue
            _drop_pending(state)
            continue
        try:
            _read_row(state, number, line)
        except _Malformed as error:
            state.problems.append(Problem(number, raw, str(error)))
    _drop_pending(state)
    return NpuSmiReport(
        npu_smi_version=state.version[0] if state.version else None,
        driver_version=state.version[1] if state.version else None,
        chips=tuple(state.chips),
        processes=tuple(state.processes),
        npus_without_processes=tuple(state.idle_npus),
        problems=tuple(state.problems),
    )


def _drop_pending(state: _State) -> None:
    """A chip's first row with no second row after it is reported rather than half-kept."""
    if state.pending is not None:
        pending = state.pending
        state.pending = None
        state.problems.append(
            Problem(pending.line_number, pending.text, "chip row without its second row")
        )


def _cells(line: str) -> list[str]:
    # A missing closing `|` is tolerated: pasted excerpts often lose the line's end.
    inner = line[1:-1] if line.endswith("|") and len(line) > 1 else line[1:]
    return [cell.strip() for cell in inner.split("|")]


def _read_row(state: _State, number: int, line: str) -> None:
    cells = _cells(line)
    first = cells[0].split()
    if len(cells) == 1:
        _read_single_cell(state, cells[0])
    elif first[:2] == ["NPU", "Name"]:
        _drop_pending(state)
        state.in_processes = False
        state.layout.has_hugepages = "Hugepages" in cells[-1]
    elif first[:1] == ["Chip"] and len(cells) >= 2 and cells[1] == "Bus-Id":
        state.layout.has_hbm = "HBM" in cells[-1]
        state.layout.second_id = {"Device": "device", "Phy-ID": "phy"}.get(
            first[1] if len(first) > 1 else "", ""
        )
    elif first[:2] == ["NPU", "Chip"] and len(cells) >= 2 and cells[1].startswith("Process"):
        _drop_pending(state)
        state.in_processes = True
        state.layout.has_container_pid = len(cells) >= 5
    elif state.in_processes:
        state.processes.append(_process(state.layout, cells))
    elif len(cells) >= 2 and _BUS_ID.fullmatch(cells[1]):
        pending, state.pending = state.pending, None
        if pending is None:
            raise _Malformed("second chip row without a first row")
        state.chips.append(_chip(state.layout, pending, cells))
    else:
        _drop_pending(state)
        state.pending = _first_row(state.layout, number, line, cells)


def _read_single_cell(state: _State, cell: str) -> None:
    version = _VERSION.fullmatch(cell)
    if version is not None:
        state.version = (version["tool"], version["driver"])
        return
    idle = _NO_PROCESSES.fullmatch(cell)
    if idle is not None:
        state.idle_npus.append(_integer(idle["npu"]))
        return
    raise _Malformed("a one-cell row that is neither the version nor 'No running processes'")


def _first_row(layout: _Layout, number: int, line: str, cells: list[str]) -> _FirstRow:
    if len(cells) != 3:
        raise _Malformed(f"expected 3 cells in a chip's first row, found {len(cells)}")
    npu_and_name = cells[0].split(maxsplit=1)
    if len(npu_and_name) != 2:
        raise _Malformed("expected an NPU id and a name")
    values = _tokens(cells[2])
    hugepages_columns = {True: (3,), False: (2,), None: (2, 3)}[layout.has_hugepages]
    if len(values) not in hugepages_columns or not cells[1]:
        raise _Malformed("expected health, power, temperature and (maybe) hugepages")
    return _FirstRow(
        line_number=number,
        text=line,
        npu_id=_integer(npu_and_name[0]),
        name=npu_and_name[1],
        health=cells[1],
        power_watts=_number(values[0]),
        temperature_celsius=_number(values[1]),
        hugepages=_pair(values[2]) if len(values) == 3 else (None, None),
    )


def _chip(layout: _Layout, first: _FirstRow, cells: list[str]) -> NpuChip:
    if len(cells) != 3:
        raise _Malformed(f"expected 3 cells in a chip's second row, found {len(cells)}")
    ids = cells[0].split()
    if len(ids) not in {1: (1,), 2: (2,), 0: (1, 2)}[_id_count(layout)]:
        raise _Malformed("expected a chip id (and a device or physical id)")
    values = _tokens(cells[2])
    hbm_columns = {True: (3,), False: (2,), None: (2, 3)}[layout.has_hbm]
    if len(values) not in hbm_columns:
        raise _Malformed("expected AI Core, memory and (maybe) HBM usage")
    second_id = _optional_integer(ids[1]) if len(ids) == 2 else None
    memory = _pair(values[1])
    hbm = _pair(values[2]) if len(values) == 3 else (None, None)
    aicore = _number(values[0])
    if aicore is not None and not 0 <= aicore <= 100:
        raise _Malformed(f"expected AI Core usage from 0 to 100 %, found {values[0][:40]!r}")
    return NpuChip(
        npu_id=first.npu_id,
        chip_id=_integer(ids[0]),
        name=first.name,
        health=first.health,
        power_watts=first.power_watts,
        temperature_celsius=first.temperature_celsius,
        hugepages_used=first.hugepages[0],
        hugepages_total=first.hugepages[1],
        bus_id=cells[1],
        aicore_ratio=None if aicore is None else aicore / 100,
        memory_used_bytes=_bytes(memory[0]),
        memory_total_bytes=_bytes(memory[1]),
        hbm_used_bytes=_bytes(hbm[0]),
        hbm_total_bytes=_bytes(hbm[1]),
        # Without a header the second id's meaning (Device or Phy-ID) is unknown: left out.
        device_id=second_id if layout.second_id == "device" else None,
        phy_id=second_id if layout.second_id == "phy" else None,
    )


def _id_count(layout: _Layout) -> int:
    """How many ids the header promised in a chip's second row (0: no header, either is fine)."""
    if layout.second_id is None:
        return 0
    return 2 if layout.second_id else 1


def _process(layout: _Layout, cells: list[str]) -> NpuProcess:
    expected = 5 if layout.has_container_pid else 4
    if len(cells) != expected:
        raise _Malformed(f"expected {expected} cells in a process row, found {len(cells)}")
    npu_and_chip = cells[0].split()
    if len(npu_and_chip) != 2 or not cells[2]:
        raise _Malformed("expected an NPU id and a chip id, then a process name")
    return NpuProcess(
        npu_id=_integer(npu_and_chip[0]),
        chip_id=_integer(npu_and_chip[1]),
        pid=_integer(cells[1]),
        name=cells[2],
        memory_bytes=_bytes(_optional_integer(cells[3])),
        container_pid=_optional_integer(cells[4]) if len(cells) == 5 else None,
    )


def _tokens(cell: str) -> list[str]:
    return _SLASH.sub("/", cell).split()


def _pair(token: str) -> tuple[int | None, int | None]:
    used, slash, total = token.partition("/")
    if not slash:
        raise _Malformed(f"expected 'used / total', found {token!r}")
    return _optional_integer(used), _optional_integer(total)


def _integer(token: str) -> int:
    number = fitting_int(token)
    # Ids, pids, sizes and usage alike: none of npu-smi's whole numbers is below zero.
    if number is None or number < 0:
        raise _Malformed(f"expected a whole number from 0 to 2^63-1, found {token[:40]!r}")
    return number


def _optional_integer(token: str) -> int | None:
    return None if token in UNKNOWN_VALUES else _integer(token)


def _number(token: str) -> float | None:
    if token in UNKNOWN_VALUES:
        return None
    try:
        number = float(token)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):  # `inf`, `nan` and 1e400 are no reading
        raise _Malformed(f"expected a finite number, found {token[:40]!r}")
    return number


def _bytes(mebibytes: int | None) -> int | None:
    if mebibytes is not None and not fits(mebibytes * MIB):
        raise _Malformed(f"{mebibytes} MiB is beyond any memory")
    return None if mebibytes is None else mebibytes * MIB
