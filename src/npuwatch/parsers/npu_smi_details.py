"""The detail outputs of `npu-smi info`: `-t <type>` key-value lines, `-m`, `-l` and `-t topo`.

Formats doc npu_smi.md §0 (summary), §5 (`-m` chip mapping), §6 (`-t usages`) and §7 (`-t
common`, `-t board` with and without `-c`, `-t health`, `-t temp`, `-t power`, `-t ecc`, `-l`
device list, `-t topo` matrix):

* `parse_key_value_output` reads any `-t <type>` output (and `-l`): `Key<spaces>: value` lines,
  cut into blocks — the NPU's header, one block per chip, the MCU — each an ordered mapping of
  key to raw value, with typed accessors (`value_ratio`, `value_number`…) in base units.
* `parse_device_list` reads `-l` on top of it; `parse_chip_mapping` the `-m` table;
  `parse_topology` the `-t topo` matrix (its legend is ignored).

As in `npu_smi`, a `$ npu-smi …` prompt line is ignored, `-` and `NA` mean unknown, and a line
that cannot be read becomes a `Problem` (line number, text, why), never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

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
_MAPPING_HEADER = "NPU ID Chip ID Chip Logic ID Chip Name"
_TOPO_LABEL = re.compile(r"NPU(\d+)")
_CPU_AFFINITY = ["CPU", "Affinity"]
_LEGEND = "Legend:"


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
        return None if mebibytes is None else round(mebibytes * MIB)

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
    return float(text) if text is not None and _DECIMAL.fullmatch(text) else None


def _whole_number(text: str | None) -> int | None:
    if text is None:
        return None
    if _HEX.fullmatch(text):
        return int(text, 16)
    return int(text) if _WHOLE.fullmatch(text) else None


# --- `npu-smi info -l` ---------------------------------------------------------------------


@dataclass(frozen=True)
class ListedNpu:
    """One NPU of `npu-smi info -l`; product name and serial are printed by newer drivers only."""

    npu_id: int
    chip_count: int | None
    product_name: str | None
    serial_number: str | None


@dataclass(frozen=True)
class DeviceList:
    """`npu-smi info -l`: the announced total and the NPUs listed (fewer in a cut excerpt)."""

    total_count: int | None
    npus: tuple[ListedNpu, ...]
    problems: tuple[Problem, ...]


def parse_device_list(text: str) -> DeviceList:
    """Read `npu-smi info -l`: a `Total Count` block, then one block per NPU (doc §7.6)."""
    report = parse_key_value_output(text)
    lines = text.splitlines()
    problems = list(report.problems)
    total: int | None = None
    npus: list[ListedNpu] = []
    for block in report.blocks:
        if TOTAL_COUNT in block.values:
            total = _typed_integer(block, TOTAL_COUNT, lines, problems)
        if NPU_ID in block.values:
            listed = _listed_npu(block, lines, problems)
            if listed is not None:
                npus.append(listed)
        elif TOTAL_COUNT not in block.values:
            reason = f"a block with neither {TOTAL_COUNT!r} nor {NPU_ID!r}"
            problems.append(Problem(block.first_line, lines[block.first_line - 1], reason))
    problems.sort(key=lambda problem: problem.line_number)
    return DeviceList(total, tuple(npus), tuple(problems))


def _listed_npu(
    block: KeyValueBlock, lines: list[str], problems: list[Problem]
) -> ListedNpu | None:
    if block.npu_id is None:
        return None  # its unreadable `NPU ID` line is already a problem
    return ListedNpu(
        npu_id=block.npu_id,
        chip_count=_typed_integer(block, CHIP_COUNT, lines, problems),
        product_name=block.value_text(PRODUCT_NAME),
        serial_number=block.value_text(SERIAL_NUMBER),
    )


def _typed_integer(
    block: KeyValueBlock, key: str, lines: list[str], problems: list[Problem]
) -> int | None:
    """`value_integer`, with a value that is neither a number nor unknown reported."""
    number = block.value_integer(key)
    if number is None and block.value_text(key) is not None:
        line = block.line_numbers[key]
        problems.append(Problem(line, lines[line - 1], f"{key} is not a number"))
    return number


# --- `npu-smi info -m` ---------------------------------------------------------------------


@dataclass(frozen=True)
class ChipMapping:
    """One row of `npu-smi info -m`: which logic id (the one ACL uses) a chip has."""

    npu_id: int
    chip_id: int
    chip_logic_id: int | None
    """None for the MCU row of 310 cards, printed `-`."""
    chip_name: str


@dataclass(frozen=True)
class ChipMappingTable:
    rows: tuple[ChipMapping, ...]
    problems: tuple[Problem, ...]


def parse_chip_mapping(text: str) -> ChipMappingTable:
    """Read the `npu-smi info -m` table (doc §5); rows count only under its known header.

    The header is required because a 5-column variant (`NPU ID Slot ID Chip ID Chip Phy-ID
    Chip Name`, doc §5, unverified) has rows that would read as 4 columns with a wrong name.
    """
    rows: list[ChipMapping] = []
    problems: list[Problem] = []
    header_known: bool | None = None  # None until a header is seen
    for number, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split()
        if not tokens or tokens[0].startswith(_PROMPT):
            continue
        if tokens[:2] == ["NPU", "ID"]:
            header_known = " ".join(tokens) == _MAPPING_HEADER
            if not header_known:
                problems.append(Problem(number, raw, "a column layout this parser does not know"))
        elif not header_known:
            reason = "a row under an unknown header" if header_known is False else "no header"
            problems.append(Problem(number, raw, f"{reason}: its columns are not known"))
        else:
            row = _mapping_row(number, raw, tokens)
            if isinstance(row, Problem):
                problems.append(row)
            else:
                rows.append(row)
    return ChipMappingTable(tuple(rows), tuple(problems))


def _mapping_row(number: int, raw: str, tokens: list[str]) -> ChipMapping | Problem:
    if len(tokens) < 4:
        return Problem(number, raw, f"expected 4 columns, found {len(tokens)}")
    npu_id, chip_id = _whole_number(tokens[0]), _whole_number(tokens[1])
    logic_id = _whole_number(tokens[2])
    if npu_id is None or chip_id is None:
        return Problem(number, raw, "expected an NPU id and a chip id")
    if logic_id is None and tokens[2] not in UNKNOWN_VALUES:
        return Problem(number, raw, f"expected a chip logic id, found {tokens[2]!r}")
    # The name may hold spaces (`Ascend 910A`): it is everything after the three ids.
    return ChipMapping(npu_id, chip_id, logic_id, " ".join(tokens[3:]))


# --- `npu-smi info -t topo` ----------------------------------------------------------------


@dataclass(frozen=True)
class NpuTopology:
    """The `-t topo` matrix: the link type between two NPUs, keyed by the `NPU<n>` numbers.

    Link types are kept as printed: `X` (self), `HCCS`, `PIX`, `PXB`, `PHB`, `SYS` (doc §7.7).
    """

    npu_ids: tuple[int, ...]
    """The columns, in print order."""
    links: Mapping[tuple[int, int], str] = field(hash=False)
    """(row NPU, column NPU) → link type."""
    cpu_affinity: Mapping[int, str] = field(hash=False)
    """The `CPU Affinity` column (`144-167`) of each row, when the output has it."""
    problems: tuple[Problem, ...]

    def link(self, first: int, second: int) -> str | None:
        return self.links.get((first, second))


@dataclass
class _TopologyState:
    columns: list[int] | None = None
    has_affinity: bool = False
    links: dict[tuple[int, int], str] = field(default_factory=dict)
    affinity: dict[int, str] = field(default_factory=dict)
    rows_read: set[int] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)


def parse_topology(text: str) -> NpuTopology:
    """Read the `npu-smi info -t topo` matrix (doc §7.7); from `Legend:` on, lines are skipped."""
    state = _TopologyState()
    for number, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split()
        if not tokens or tokens[0].startswith(_PROMPT):
            continue
        if tokens[0] == _LEGEND:
            break
        if state.columns is None:
            _read_topology_header(state, number, raw, tokens)
        else:
            _read_topology_row(state, number, raw, tokens)
    return NpuTopology(
        npu_ids=tuple(state.columns or ()),
        links=MappingProxyType(state.links),
        cpu_affinity=MappingProxyType(state.affinity),
        problems=tuple(state.problems),
    )


def _read_topology_header(state: _TopologyState, number: int, raw: str, tokens: list[str]) -> None:
    has_affinity = tokens[-2:] == _CPU_AFFINITY
    labels = tokens[:-2] if has_affinity else tokens
    ids = [_topology_label(label) for label in labels]
    if not ids or None in ids:
        state.problems.append(Problem(number, raw, "expected the header 'NPU0 NPU1 …'"))
        return
    state.columns = [npu_id for npu_id in ids if npu_id is not None]
    state.has_affinity = has_affinity


def _read_topology_row(state: _TopologyState, number: int, raw: str, tokens: list[str]) -> None:
    columns = state.columns or []
    row = _topology_label(tokens[0])
    cells = tokens[1:]
    # A row may leave its affinity out; it may not leave out, or add, a link.
    widths = (len(columns), len(columns) + 1) if state.has_affinity else (len(columns),)
    if row is None or row not in columns:
        reason = "expected a row that starts with an NPU<n> of the header"
        state.problems.append(Problem(number, raw, reason))
    elif len(cells) not in widths:
        reason = f"expected {len(columns)} link types, found {len(cells)} cells"
        state.problems.append(Problem(number, raw, reason))
    elif row in state.rows_read:
        state.problems.append(Problem(number, raw, f"a second row for NPU{row}"))
    else:
        state.rows_read.add(row)
        for column, link in zip(columns, cells, strict=False):
            state.links[row, column] = link
        if len(cells) > len(columns):
            state.affinity[row] = cells[-1]


def _topology_label(token: str) -> int | None:
    label = _TOPO_LABEL.fullmatch(token)
    return None if label is None else int(label[1])
