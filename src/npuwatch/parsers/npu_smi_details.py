"""The detail outputs of `npu-smi info`: `-t <type>` key-value lines.

Formats doc npu_smi.md §0 (summary), §5 (`-m` chip mapping), §6 (`-t usages`) and §7 (`-t
common`, `-t board` with and without `-c`, `-t health`, `-t temp`, `-t power`, `-t ecc`, `-l`
device list, `-t topo` matrix):

`parse_key_value_output` reads any `-t <type>` output: `Key<spaces>: value` lines, cut into
blocks — the NPU's header, one block per chip, the MCU — each an ordered mapping of key to raw
value, with typed accessors (`value_ratio`, `value_number`…) in base units. `doctor` reads `-t
board` and `-t health` with it.

As in `npu_smi`, a `$ npu-smi …` prompt line is ignored, `-` and `NA` mean unknown, and a line
that cannot be read becomes a `Problem` (line number, text, why), never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from npuwatch.bounded_numbers import finite_float, fits, fitting_int
from npuwatch.parsers.npu_smi import MIB, UNKNOWN_VALUES, Problem

NPU_ID = "NPU ID"
CHIP_ID = "Chip ID"
"""The key that says which chip a block describes: the first line of a chip's block in `-t
common`, the last one in `-t usages`, `-t temp`, `-t power` and `-t ecc` (doc §0)."""
CHIP_NAME = "Chip Name"
TOTAL_COUNT = "Total Count"
CHIP_COUNT = "Chip Count"
PRODUCT_NAME = "Product Name"
SERIAL_NUMBER = "Serial Number"

_PROMPT = "$"
_DECIMAL = re.compile(r"[-+]?\d+(?:\.\d+)?")
_WHOLE = re.compile(r"[-+]?\d+")
_HEX = re.compile(r"0[xX][0-9A-Fa-f]+")


# --- key-value outputs (`-t usages`, `-t common`, `-t board`, `-t health`, …, `-l`) ---------


@dataclass(frozen=True)
class KeyValueBlock:
    """One block of a key-value output: an NPU's header, one chip, or the MCU, in print order.

    `values` keeps every key exactly as printed (runs of spaces inside a key made single) with
    its raw value; the `value_*` accessors read them in base units and return None when the key
    is absent, unknown (`-`, `NA`, empty) or not a number.
    """

    first_line: int
    values: Mapping[str, str] = field(hash=False)
    npu_id: int | None
    """The block's own `NPU ID`, else the one of the block before it (chip blocks print none)."""
    chip_id: int | None
    """The block's own `Chip ID`; None for an NPU header, an MCU block or `-t health`."""
    line_numbers: Mapping[str, int] = field(hash=False, compare=False, repr=False)
    """The 1-based line each key was read from, for callers that report a value as a problem."""

    @property
    def chip_name(self) -> str | None:
        """`Chip Name` when the block has one (`mcu` names the MCU block of `-t common`)."""
        return self.value_text(CHIP_NAME)

    def value_text(self, key: str) -> str | None:
        """The raw value, or None when the key is absent or the value unknown."""
        raw = self.values.get(key)
        if raw is None or not raw or raw in UNKNOWN_VALUES:
            return None
        return raw

    def value_number(self, key: str) -> float | None:
        """A decimal value as printed (`Temperature(C)` in °C, `…Power(W)` in watts)."""
        return _decimal(self.value_text(key))

    def value_integer(self, key: str) -> int | None:
        """A whole number, decimal or `0x` hexadecimal (`Board ID : 0x02`, ECC counts)."""
        return _whole_number(self.value_text(key))

    def value_ratio(self, key: str) -> float | None:
        """A `(%)` value as a ratio 0..1 (`HBM Usage Rate(%) : 4` is 0.04)."""
        percent = self.value_number(key)
        return None if percent is None else percent / 100

    def value_bytes(self, key: str) -> int | None:
        """An `(MB)` value in bytes; npu-smi's MB are MiB, as in the summary table."""
        mebibytes = self.value_number(key)
        if mebibytes is None or not fits(round(mebibytes * MIB)):  # a size beyond 64 bits
            return None
        return round(mebibytes * MIB)

    def value_hertz(self, key: str) -> float | None:
        """A `(MHZ)` value in hertz (`Aicore Freq(MHZ) : 1800` is 1.8e9)."""
        megahertz = self.value_number(key)
        return None if megahertz is None else megahertz * 1_000_000


@dataclass(frozen=True)
class KeyValueReport:
    """Every block of one key-value output, in print order, and the lines that were not read."""

    blocks: tuple[KeyValueBlock, ...]
    problems: tuple[Problem, ...]

    @property
    def chips(self) -> tuple[KeyValueBlock, ...]:
        """The blocks that describe one chip (they carry a `Chip ID`)."""
        return tuple(block for block in self.blocks if block.chip_id is not None)

    def chip(self, chip_id: int, npu_id: int | None = None) -> KeyValueBlock | None:
        """The first block of chip `chip_id` (of NPU `npu_id`, when given)."""
        for block in self.chips:
            if block.chip_id == chip_id and npu_id in (None, block.npu_id):
                return block
        return None

    def block_with(self, key: str) -> KeyValueBlock | None:
        """The first block that holds `key`: the way to one-block outputs such as `-t board`."""
        return next((block for block in self.blocks if key in block.values), None)


@dataclass(frozen=True)
class _Entry:
    line_number: int
    text: str
    key: str
    value: str


_Paragraph = list[_Entry]


def parse_key_value_output(text: str) -> KeyValueReport:
    """Read a `npu-smi info -t <type>` (or `-l`) output into blocks; see the module docstring."""
    problems: list[Problem] = []
    blocks: list[KeyValueBlock] = []
    for output in _outputs(text, problems):
        blocks.extend(_blocks_of_output(output, problems))
    problems.sort(key=lambda problem: problem.line_number)
    return KeyValueReport(tuple(blocks), tuple(problems))


def _outputs(text: str, problems: list[Problem]) -> list[list[_Paragraph]]:
    """The text cut at prompt lines (one output each), each output cut at blank lines.

    npu-smi prints a blank line between the NPU's header, each chip and the MCU, so a paragraph
    is at most those blocks run together; a prompt starts another command's output.
    """
    outputs: list[list[_Paragraph]] = [[[]]]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith(_PROMPT):
            outputs.append([[]])
        elif not line:
            outputs[-1].append([])
        else:
            entry = _entry(number, raw, line)
            if isinstance(entry, Problem):
                problems.append(entry)
            else:
                outputs[-1][-1].append(entry)
    return [[paragraph for paragraph in output if paragraph] for output in outputs]


def _entry(number: int, raw: str, line: str) -> _Entry | Problem:
    # The first colon separates: keys have none, values may (`PCIe Bus Info : 0000:61:00.0`).
    key, colon, value = line.partition(":")
    key = " ".join(key.split())
    if not colon:
        return Problem(number, raw, "expected 'key : value', found no colon")
    if not key:
        return Problem(number, raw, "expected 'key : value', found no key before the colon")
    return _Entry(number, raw, key, value.strip())


def _blocks_of_output(paragraphs: list[_Paragraph], problems: list[Problem]) -> list[KeyValueBlock]:
    # The key order of the output says where a chip's block ends: `-t usages` and its kind
    # close a chip's paragraph with its `Chip ID`, `-t common` opens it with it (doc §0).
    id_closes_block = any(paragraph[-1].key == CHIP_ID for paragraph in paragraphs)
    blocks: list[KeyValueBlock] = []
    npu_id: int | None = None
    for paragraph in paragraphs:
        for entries in _split_at_chip_ids(paragraph, id_closes_block):
            block = _block(entries, npu_id, problems)
            npu_id = block.npu_id
            blocks.append(block)
    return blocks


def _split_at_chip_ids(paragraph: _Paragraph, id_closes_block: bool) -> Iterator[_Paragraph]:
    """A paragraph cut into one part per chip, for outputs printed without blank lines between.

    When the id opens a block, only a second `Chip ID` starts a new part: `-t board -c` prints
    `NPU ID` before its single `Chip ID`, and both describe the same chip.
    """
    part: _Paragraph = []
    for entry in paragraph:
        opens_another = not id_closes_block and entry.key == CHIP_ID
        if opens_another and any(kept.key == CHIP_ID for kept in part):
            yield part
            part = []
        part.append(entry)
        if id_closes_block and entry.key == CHIP_ID:
            yield part
            part = []
    if part:
        yield part


def _block(
    entries: _Paragraph, inherited_npu_id: int | None, problems: list[Problem]
) -> KeyValueBlock:
    kept: dict[str, _Entry] = {}
    for entry in entries:
        earlier = kept.get(entry.key)
        if earlier is None:
            kept[entry.key] = entry
        else:
            # Kept apart rather than overwritten: a second value under one key means two blocks
            # ran together, and the first belongs to this block's chip (doc §7.1, the MCU).
            reason = f"{entry.key!r} already read on line {earlier.line_number} of this block"
            problems.append(Problem(entry.line_number, entry.text, reason))
    own_npu = kept.get(NPU_ID)
    chip = kept.get(CHIP_ID)
    return KeyValueBlock(
        first_line=entries[0].line_number,
        values=MappingProxyType({key: entry.value for key, entry in kept.items()}),
        npu_id=inherited_npu_id if own_npu is None else _identifier(own_npu, problems),
        chip_id=None if chip is None else _identifier(chip, problems),
        line_numbers=MappingProxyType({key: entry.line_number for key, entry in kept.items()}),
    )


def _identifier(entry: _Entry, problems: list[Problem]) -> int | None:
    """The whole number of an `NPU ID` or `Chip ID` line; anything else but unknown is reported."""
    if entry.value in UNKNOWN_VALUES:
        return None
    number = _whole_number(entry.value)
    if number is None:
        problems.append(Problem(entry.line_number, entry.text, f"{entry.key} is not a number"))
    return number


def _decimal(text: str | None) -> float | None:
    # A pattern, not float() alone, which would also accept `nan`, `inf` and `1_000`.
    if text is None or not _DECIMAL.fullmatch(text):
        return None
    return finite_float(float(text))  # 1e400 digits long is no reading either


def _whole_number(text: str | None) -> int | None:
    if text is None:
        return None
    if _HEX.fullmatch(text):
        return fitting_int(text, 16)
    return fitting_int(text) if _WHOLE.fullmatch(text) else None
