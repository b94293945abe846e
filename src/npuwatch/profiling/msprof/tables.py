"""Reading one profiling CSV into a DataFrame with canonical columns, whatever its spelling.

Every CSV kind (op_summary, kernel_details, op_statistic ...) is described by a `TableSpec`: the
header spellings it may have, the columns it cannot do without, and which columns hold numbers.
`read_table` then copes with what real files contain: spaces after the commas of a header, a TAB
after a quoted start time (torch_npu writes one so that spreadsheets keep the digits), shapes
wrapped in literal double quotes (three quote marks each side in the file, so the value is
`"81920,4096;8192,512"`), `N/A` for missing values, and `AI Core` next to `AI_CORE`. A row
with the wrong number of fields, or without a number where one is needed, is skipped and
reported as a problem (`file:line: what`), never raised.

The csv module checks the rows (csv_rows keeps the line numbers that problems name); pandas'
C parser then reads the good ones and whole columns are converted at once, so a 200 000-row
kernel_details.csv takes a few seconds.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from npuwatch.parsers.problem_list import ProblemList
from npuwatch.parsers.table_numbers import numbers_of, unusable_reason, usable_numbers
from npuwatch.profiling.msprof.columns import TASK_TYPE, header_key, snake_case
from npuwatch.profiling.msprof.csv_rows import parse_rows, split_rows

MISSING = frozenset({"", "N/A", "n/a", "NA"})
"""Cell values that mean "no value"."""
_SEPARATORS = re.compile(r"[\s-]+")


@dataclass(frozen=True)
class TableSpec:
    """What one kind of profiling CSV looks like.

    `aliases` maps each known header spelling (as written by the tool) to its canonical column;
    `required` columns must be in the header; rows whose `numeric_required` cell is not a number
    are skipped. `floats` and `integers` are converted (missing → NaN/NA), the other canonical
    columns are text, and `core_types` are upper-cased with `_` for spaces. Columns the spec
    does not know keep the type pandas gives them (numbers for the PMU metrics).
    """

    kind: str
    aliases: Mapping[str, str]
    required: tuple[str, ...] = ()
    numeric_required: tuple[str, ...] = ()
    floats: frozenset[str] = frozenset()
    integers: frozenset[str] = frozenset()
    core_types: frozenset[str] = frozenset({TASK_TYPE})
    _by_key: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_by_key", {header_key(name): column for name, column in self.aliases.items()}
        )

    def canonical(self, header: str) -> str | None:
        return self._by_key.get(header_key(header))

    def columns(self) -> list[str]:
        """The canonical columns of this kind, in the order of `aliases`."""
        return list(dict.fromkeys(self.aliases.values()))

    def spellings(self, column: str) -> str:
        return " or ".join(f"'{name}'" for name, target in self.aliases.items() if target == column)


@dataclass(frozen=True)
class ParsedTable:
    """The rows that could be read, and what was wrong with the others."""

    frame: pd.DataFrame
    problems: list[str]


def empty_table(spec: TableSpec) -> pd.DataFrame:
    """A frame with the canonical columns of `spec` and no rows (for a file that is absent)."""
    frame: pd.DataFrame = pd.DataFrame(
        {column: pd.Series([], dtype=object) for column in spec.columns()}
    )
    for column in spec.columns():
        if column in spec.floats:
            frame[column] = frame[column].astype("float64")
        elif column in spec.integers:
            frame[column] = frame[column].astype("Int64")
    return frame


def read_table(data: bytes | str, source: str, spec: TableSpec) -> ParsedTable:
    """Parse one CSV file of the kind `spec` describes. `source` names it in problems."""
    text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
    text = text.lstrip("\ufeff")
    if not text.strip():
        return ParsedTable(empty_table(spec), [f"{source}: empty file, no {spec.kind} header"])
    problems = ProblemList(source)
    rows = split_rows(text, problems)
    if rows.header is None:
        return ParsedTable(empty_table(spec), [*problems.finish(), f"{source}: no header"])
    names = _column_names(rows.header, spec)
    missing = [column for column in spec.required if column not in names]
    if missing:
        wanted = ", ".join(f"no column {spec.spellings(column)}" for column in missing)
        problems.add(rows.header_line, f"{spec.kind} header expected: {wanted}")
        return ParsedTable(empty_table(spec), problems.finish())
    raw = _read_rows("".join(rows.body), names, spec)
    columns = {}
    for position, name in enumerate(names):
        columns[name] = _convert(raw[name], name, spec)
        if name not in spec.numeric_required:  # those rows are skipped and named below
            label = rows.header[position].strip()
            _report_unusable(columns[name], raw[name], label, rows.lines, problems)
    frame = _ordered(columns, names, spec, len(raw))
    keep = pd.Series(True, index=frame.index)
    for column in spec.numeric_required:
        if column in names:
            label = rows.header[names.index(column)].strip()
            keep &= _numbers_present(frame[column], raw[column], label, rows.lines, problems)
    kept: pd.DataFrame = frame[keep].reset_index(drop=True)
    return ParsedTable(kept, problems.finish())


def _column_names(header: list[str], spec: TableSpec) -> list[str]:
    """The canonical name of each header cell; unknown or repeated ones keep a snake_case name."""
    names: list[str] = []
    for raw in header:
        name = spec.canonical(raw) or snake_case(raw)
        while name in names:
            name += "_2"
        names.append(name)
    return names


def _read_rows(body: str, names: list[str], spec: TableSpec) -> pd.DataFrame:
    """The well-formed rows as a frame: known columns as text (converted by `_convert`), the
    others with the types pandas infers (the PMU metrics become numbers)."""
    known = set(spec.aliases.values())
    numbers = spec.floats | spec.integers

    def numeric(name: str) -> bool:
        return name in numbers

    if not body:
        nothing: pd.DataFrame = pd.DataFrame({name: pd.Series([], dtype=object) for name in names})
        return nothing
    # A field written `"""4096,512"""` holds a value wrapped in literal quotes; read as
    # `"4096,512"` it is the plain value. No other field of these files holds a quote mark.
    body = body.replace('"""', '"')
    try:
        frame: pd.DataFrame = pd.read_csv(
            io.StringIO(body),
            header=None,
            names=names,
            index_col=False,
            # Text columns stay text; number columns are read by the C parser when they are
            # clean, and left as text (converted by `_convert`, bad cells reported) when not.
            dtype={name: object for name in names if name in known and not numeric(name)},
            keep_default_na=False,
            na_values=sorted(MISSING),
            skipinitialspace=True,
            low_memory=False,
        )
    except (ValueError, pd.errors.ParserError):
        # The csv module and pandas disagree about a row: take the csv module's fields.
        frame = pd.DataFrame(parse_rows(body), columns=names, dtype=object)
        for name in names:
            if name not in known:
                frame[name] = _numbers_or_text(frame[name])
    return frame


def _convert(values: pd.Series, name: str, spec: TableSpec) -> pd.Series:
    if name in spec.floats or name in spec.integers:
        # to_numeric ignores outer whitespace, so the TAB after start times needs no strip.
        numbers = usable_numbers(numbers_of(values))
        if name in spec.integers:
            whole: pd.Series = numbers.where(numbers == numbers.round()).astype("Int64")
            return whole
        return numbers.astype("float64")
    if name not in spec.aliases.values() and pd.api.types.is_float_dtype(values.dtype):
        return usable_numbers(values)  # a metric pandas read as numbers: the same rule
    if name in spec.core_types:
        return _tidy(values, _core_type)
    if name in spec.aliases.values():
        return _tidy(values)
    return values


def _report_unusable(
    converted: pd.Series, raw: pd.Series, label: str, lines: list[int], problems: ProblemList
) -> None:
    """Name each cell that held a number no measurement can be (it is left empty)."""
    if not (pd.api.types.is_numeric_dtype(converted.dtype) and len(converted)):
        return
    numbers = raw if pd.api.types.is_float_dtype(raw.dtype) else numbers_of(raw)
    bad = numbers.notna() & converted.isna()
    for row in bad[bad].index:
        what = f"{_cell(raw[row])}, {unusable_reason(numbers[row])}"
        problems.add(lines[row], f"{label} is {what}; left empty")


def _cell(value: object) -> str:
    """A cell as a problem quotes it (pandas may have read a number column as floats already)."""
    text = (
        value.strip()
        if isinstance(value, str)
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )
    return repr(text) if len(text) <= 30 else f"'{text[:20]}…' ({len(text)} characters)"


def _tidy(values: pd.Series, transform: Callable[[str], str] | None = None) -> pd.Series:
    """Outer whitespace off, missing and N/A as None, then `transform`.

    Worked out once per distinct value and mapped: text columns repeat a few names over many
    rows, and this is many times faster than the `.str` accessor at 200 000 rows.
    """
    text = values.fillna("").astype(object)
    mapping: dict[str, str | None] = {}
    for value in pd.unique(text):
        stripped = str(value).strip()
        if stripped in MISSING:
            mapping[value] = None
        else:
            mapping[value] = transform(stripped) if transform else stripped
    tidy: pd.Series = text.map(mapping)
    return tidy


def _core_type(value: str) -> str:
    """`AI Core` → `AI_CORE`, `ai-cpu` → `AI_CPU`."""
    return _SEPARATORS.sub("_", value.upper())


def _numbers_or_text(values: pd.Series) -> pd.Series:
    """A column of numbers as numbers; anything else as it is."""
    numbers = numbers_of(values)
    present = int(values.notna().sum()) - int(values.isin(MISSING).sum())
    return numbers if present and int(numbers.notna().sum()) == present else values


def _ordered(
    columns: dict[str, pd.Series], names: list[str], spec: TableSpec, length: int
) -> pd.DataFrame:
    """The canonical columns first, in the order of the spec (absent ones as NA), then the
    file's own extras in file order."""
    empty = empty_table(spec)
    for name in spec.columns():
        if name not in columns:
            columns[name] = empty[name].reindex(range(length))
    order = spec.columns() + [name for name in names if name not in spec.aliases.values()]
    frame: pd.DataFrame = pd.DataFrame({name: columns[name] for name in order})
    return frame


def _numbers_present(
    numbers: pd.Series, raw: pd.Series, label: str, lines: list[int], problems: ProblemList
) -> pd.Series:
    """Which rows have a number in this required column; the others are reported."""
    bad = numbers.isna()
    for row in bad[bad].index:
        value = raw[row]
        if pd.notna(numbers_of(pd.Series([value]))[0]):  # a number, but inf or past 64 bits
            what = f"{_cell(value)}, {unusable_reason(value)}"
        else:
            what = f"{_cell(value)}, not a number" if isinstance(value, str) else "empty"
        problems.add(lines[row], f"{label} is {what}; row skipped")
    present: pd.Series = ~bad
    return present
