"""msOpProf's simulator outputs of one launch: the hotspots of each simulated core.

A simulator run (`msprof op simulator`) adds `simulator/<core>/<core>_code_exe.csv` (source
lines) and `<core>_instr_exe.csv` (instructions, with a quoted `detail`) per core
(`core0.veccore0`, `core1.cubecore0`). They are cycle counts of a model of the chip, not
measurements on the board, and have columns of their own, so they are read apart from the
on-board metric CSVs (`read_metrics`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from npuwatch.profiling.opprof.read_files import (
    OpProfCsv,
    cell_number,
    listing,
    read_opprof_csv,
)

_SIM_CSV_NAME = re.compile(r"^(?P<core>[.A-Za-z0-9]+)_(?P<kind>code|instr)_exe(?:_\d{17})?\.csv$")


@dataclass(frozen=True)
class CodeLine:
    """A source line of a simulated core (`<core>_code_exe.csv`)."""

    code: str
    call_count: int | None
    cycles: float
    running_time_us: float | None


@dataclass(frozen=True)
class Instruction:
    """An instruction (one PC) of a simulated core (`<core>_instr_exe.csv`)."""

    instr: str
    addr: str
    pipe: str
    call_count: int | None
    cycles: float
    running_time_us: float | None
    detail: str


@dataclass(frozen=True)
class SimulatedCore:
    """The hotspot tables of one core of a simulator run (`core0.veccore0`, `core1.cubecore0`)."""

    core: str
    code_lines: tuple[CodeLine, ...]
    instructions: tuple[Instruction, ...]


def simulated_cores(folder: Path, problems: list[str]) -> Iterator[SimulatedCore]:
    """The cores under a launch's `simulator/` folder that have hotspots, each sorted by
    cycles (the costliest first)."""
    for core_folder in listing(folder):
        if not core_folder.is_dir():
            continue
        code: list[CodeLine] = []
        instructions: list[Instruction] = []
        for path in listing(core_folder):
            match = _SIM_CSV_NAME.match(path.name)
            if match is None:
                continue
            read = read_opprof_csv(path, problems)
            if match.group("kind") == "code":
                code.extend(_code_lines(path, read, problems))
            else:
                instructions.extend(_instructions(path, read, problems))
        if code or instructions:
            code.sort(key=lambda line: -line.cycles)
            instructions.sort(key=lambda instruction: -instruction.cycles)
            yield SimulatedCore(core_folder.name, tuple(code), tuple(instructions))


def _hotspot_cells(
    path: Path, read: OpProfCsv, needed: tuple[str, ...], problems: list[str]
) -> Iterator[tuple[dict[str, str], float, int | None, float | None]]:
    """Each row as a dict, with its cycles, call count and running time, the bad ones reported."""
    missing = [column for column in needed if column not in read.header]
    if missing:
        problems.append(f"{path}:1: no column {', '.join(missing)}; file skipped")
        return
    for line, cells in read.rows:
        record = dict(zip(read.header, cells, strict=True))
        cycles = cell_number(record["cycles"])
        if cycles is None:
            problems.append(f"{path}:{line}: cycles {record['cycles']!r} is not a number; skipped")
            continue
        count = cell_number(record.get("call_count", ""))
        running = cell_number(record.get("running_time(us)", ""))
        yield record, cycles, None if count is None else int(count), running


def _code_lines(path: Path, read: OpProfCsv, problems: list[str]) -> Iterator[CodeLine]:
    for record, cycles, count, running in _hotspot_cells(path, read, ("code", "cycles"), problems):
        yield CodeLine(record["code"], count, cycles, running)


def _instructions(path: Path, read: OpProfCsv, problems: list[str]) -> Iterator[Instruction]:
    needed = ("instr", "cycles")
    for record, cycles, count, running in _hotspot_cells(path, read, needed, problems):
        yield Instruction(
            instr=record["instr"],
            addr=record.get("addr", ""),
            pipe=record.get("pipe", ""),
            call_count=count,
            cycles=cycles,
            running_time_us=running,
            detail=record.get("detail", ""),
        )
