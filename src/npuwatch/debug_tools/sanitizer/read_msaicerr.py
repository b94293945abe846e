"""msaicerr's output folders read into the AI Core errors it analysed.

`msaicerr.py -p <collected> -out <dir>` writes `<dir>/info_<timestamp>/`: README.txt (one line
per error: folder, error code, device_id=, core_id=, task_id=, node=, kernel=), a folder per
analysed error holding info.txt, and debug_info.txt (the tool's log, `<time> (<pid>) - [LEVEL]
message` lines). info.txt starts with the root-cause conclusion, then numbered sections between
rows of stars: 1. Basic information (`key : value`), 2. AI Core DFX Register, 3. Operator Error
Line Number (start/current pc, maybe the related instructions), 4. Operator Input/Output Memory,
5. Operator Dump File Parsing, 6. Execution Result of the Single-Operator Test Case.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from npuwatch.untrusted_files import read_file

_README_LINE = re.compile(
    r"^\s*(?P<folder>\S+)\s+(?P<code>\S+)\s+device_id=(?P<device>\S*)\s+core_id=(?P<core>\S*)"
    r"\s+task_id=(?P<task>\S*)\s+node=(?P<node>.*?)\s+kernel=(?P<kernel>.*?)\s*$"
)
_SECTION = re.compile(r"^\*{3,}\s*(?P<number>\d+)\.\s*(?P<title>.+?)\s*\*{3,}\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z_][\w .]*?)\s*:\s?(?P<value>.*)$")
_DEBUG_LINE = re.compile(
    r"^(?:(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \((?P<pid>\d+)\) - )?"
    r"\[(?P<level>[A-Z]+)\]\s*(?P<message>.*)$"
)
_INSTRUCTIONS = "related instructions"


@dataclass(frozen=True)
class ReadmeEntry:
    """One line of README.txt: an error msaicerr found, and the folder it analysed it in."""

    line: int
    folder: str
    error_code: str
    device_id: str
    core_id: str
    task_id: str
    node: str
    kernel: str


@dataclass(frozen=True)
class AnalysedError:
    """One error folder's info.txt: the conclusion and what each section says."""

    folder: str
    conclusion: str
    basic: dict[str, str]
    """Section 1 as printed: `error time`, `device id`, `core id`, `kernel name` ..."""
    error_code: str | None
    registers: dict[str, str]
    start_pc: str | None
    current_pc: str | None
    instructions: list[str]
    memory: list[str]
    """Section 4: the address check and the args before/after execution."""
    single_op_result: str | None
    sections: list[str]
    """The numbered sections found, `1. Basic information` ..."""

    @property
    def kernel_name(self) -> str | None:
        return self.basic.get("kernel name") or None

    @property
    def device_id(self) -> str | None:
        return self.basic.get("device id") or None

    @property
    def core_id(self) -> str | None:
        return self.basic.get("core id") or None


@dataclass(frozen=True)
class DebugLine:
    """A warning or error of debug_info.txt."""

    line: int
    time: str | None
    level: str
    message: str


@dataclass(frozen=True)
class MsaicerrOutput:
    """One info_<timestamp> folder."""

    folder: str
    entries: list[ReadmeEntry] = field(default_factory=list)
    errors: list[AnalysedError] = field(default_factory=list)
    debug: list[DebugLine] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_msaicerr_output(folder: Path) -> bool:
    """An info_* folder with a README.txt, or with an error folder holding info.txt."""
    if not folder.name.startswith("info_") or not folder.is_dir():
        return False
    return (folder / "README.txt").is_file() or any(folder.glob("*/info.txt"))


def read_msaicerr_output(folder: Path, name: str | None = None) -> MsaicerrOutput:
    """Every error of one info_* folder (named `name` in errors and problems, default its
    path); unreadable parts become problems."""
    shown = Path(name) if name else folder
    problems: list[str] = []
    entries = _readme(folder / "README.txt", problems)
    folders = sorted(path.parent for path in folder.glob("*/info.txt"))
    errors = []
    for error_folder in folders:
        text = _text(error_folder / "info.txt", problems)
        if text is not None:
            errors.append(parse_info_text(text, str(shown / error_folder.name), problems))
    debug_files = [folder / "debug_info.txt", *(path / "debug_info.txt" for path in folders)]
    debug = [
        line
        for path in debug_files
        if path.is_file()
        for line in parse_debug_text(_text(path, problems) or "")
    ]
    if not entries and not errors:
        problems.append(f"{shown}: no README.txt line and no error folder with info.txt")
    return MsaicerrOutput(str(shown), entries, errors, debug, problems)


def parse_info_text(text: str, folder: str, problems: list[str]) -> AnalysedError:
    """One info.txt; a file without the numbered sections is named in `problems`."""
    source = f"{folder}/info.txt"
    head: list[str] = []
    sections: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        heading = _SECTION.match(line.strip())
        if heading is not None:
            current = sections.setdefault(f"{heading['number']}. {heading['title']}", [])
        elif current is None:
            head.append(line)
        else:
            current.append((number, line))
    by_number = {name.split(".", 1)[0]: lines for name, lines in sections.items()}
    if "1" not in by_number:
        problems.append(f"{source}:1: no `1. Basic information` section: not an info.txt?")
    missing = [number for number in "123456" if number not in by_number]
    if missing and "1" in by_number:
        problems.append(f"{source}: sections {', '.join(missing)} missing (file cut short?)")
    registers = _key_values(by_number.get("2", []))
    pcs = _key_values(by_number.get("3", []))
    return AnalysedError(
        folder=folder,
        conclusion=" ".join(line.strip() for line in head if line.strip()),
        basic=_key_values(by_number.get("1", [])),
        error_code=registers.pop("AIC_ERROR", None) or None,
        registers=registers,
        start_pc=pcs.get("start pc") or None,
        current_pc=pcs.get("current pc") or None,
        instructions=_instructions(by_number.get("3", [])),
        memory=[line.strip() for _, line in by_number.get("4", []) if line.strip()],
        single_op_result=next(
            (line.strip() for _, line in by_number.get("6", []) if line.strip()), None
        ),
        sections=list(sections),
    )


def parse_debug_text(text: str) -> list[DebugLine]:
    """The WARNING and ERROR lines of debug_info.txt (the rest is progress)."""
    found = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = _DEBUG_LINE.match(raw.strip())
        if line is not None and line["level"] in {"WARNING", "ERROR"}:
            found.append(DebugLine(number, line["time"], line["level"], line["message"]))
    return found


def _readme(path: Path, problems: list[str]) -> list[ReadmeEntry]:
    if not path.is_file():
        return []
    entries = []
    for number, raw in enumerate((_text(path, problems) or "").split("\n"), start=1):
        line = _README_LINE.match(raw.rstrip("\r"))
        if line is not None:
            entries.append(
                ReadmeEntry(
                    number,
                    line["folder"],
                    line["code"],
                    line["device"],
                    line["core"],
                    line["task"],
                    line["node"],
                    line["kernel"],
                )
            )
    return entries


def _key_values(lines: list[tuple[int, str]]) -> dict[str, str]:
    """`key : value` lines (keys padded with blanks before the colon), in order."""
    found: dict[str, str] = {}
    for _, line in lines:
        if _INSTRUCTIONS in line:
            break
        pair = _KEY_VALUE.match(line.strip())
        if pair is not None:
            found.setdefault(pair["key"].strip(), pair["value"].strip())
    return found


def _instructions(lines: list[tuple[int, str]]) -> list[str]:
    """The decompiled instructions after `related instructions (...):`, as printed."""
    for position, (_, line) in enumerate(lines):
        if _INSTRUCTIONS in line:
            return [text.rstrip() for _, text in lines[position + 1 :] if text.strip()]
    return []


def _text(path: Path, problems: list[str]) -> str | None:
    try:
        return read_file(path).decode("utf-8", errors="replace")
    except OSError as failure:
        problems.append(f"{path}:0: cannot read: {failure.strerror}")
        return None
