"""msprobe monitor statistics CSVs, read one step-range file at a time.

`<data type>_<first step>-<last step>.csv` (../shared/design/formats/msprobe.md §4), header
`vpp_stage, name, step, [micro_step,] <ops…>`. Each file becomes one piece per rank: the rank of
its folder (`rank<N>` in a folder name at or below the root), else the TensorBoard-style tag in
`name` (`0:layer.weight/rank1/post_grad`), else unknown (-1).

A 100,000-step run is millions of rows, so each CSV goes through pandas' C parser in one call
with the dtypes declared up front (name categorical, steps int64, ops float64: no type guessing
and no conversion afterwards), skipping spaces after commas only in a file that has them; a
file whose cells do not fit those types is read again the tolerant way, and only a file that
shows damage (a skipped line, a short row, a cell that is not a number) is looked at line by
line, to say which lines were dropped. Pieces are yielded one file at a time, so that a caller
that digests them never holds the whole run.
"""

from __future__ import annotations

import csv
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.bounded_numbers import fitting_int
from npuwatch.debug_tools.table_files import decode
from npuwatch.parsers.problem_list import ProblemList
from npuwatch.parsers.table_numbers import numbers_of
from npuwatch.untrusted_files import open_binary, read_file

if TYPE_CHECKING:
    import pandas as pd

DATA_TYPES = (
    "actv_grad",
    "actv",
    "exp_avg_sq",
    "exp_avg",
    "grad_unreduced",
    "grad_reduced",
    "param_origin",
    "param_updated",
)
"""Longest first, so that `actv_grad_0-4.csv` is not taken for `actv`."""
KEY_COLUMNS = ("vpp_stage", "name", "step", "micro_step")
UNKNOWN_RANK = -1
TAG = re.compile(r"^(?:(\d+):)?(.*?)/rank(\d+)/(.+)$")
"""A TensorBoard-style tag: vpp stage, module or parameter, rank, task."""
_FILE_NAME = re.compile(rf"^({'|'.join(DATA_TYPES)})_(\d+)-(\d+)\.csv$")
_RANK_FOLDER = re.compile(r"(?:^|[^a-z0-9])rank[_-]?(\d+)(?:$|[^0-9])", re.IGNORECASE)
_SKIPPED = re.compile(r"Skipping line (\d+): expected (\d+) fields, saw (\d+)")
_SNIFFED_BYTES = 65_536
_READ_OPTIONS: dict[str, Any] = {
    "index_col": False,
    "skipinitialspace": True,
    "on_bad_lines": "warn",
    "encoding": "utf-8-sig",
}


@dataclass(frozen=True)
class StatisticsPiece:
    """The rows of one rank in one statistics CSV."""

    data_type: str
    rank: int
    frame: pd.DataFrame
    """Columns vpp_stage, name (categorical), step (int64), micro_step when the file has it,
    and one float64 column per op."""


def statistics_files(root: Path) -> list[Path]:
    """The statistics CSVs under `root`, by folder, data type and first step."""
    return sorted(
        (path for path in root.rglob("*.csv") if _FILE_NAME.match(path.name)), key=_csv_order
    )


def read_pieces(
    paths: Iterable[Path], root: Path, problems: list[str]
) -> Iterator[StatisticsPiece]:
    """Each file's good rows, one piece per rank, file after file; what is damaged goes to
    `problems` as `file:line: what`."""
    for path in paths:
        data_type = _data_type(path)
        file_problems = ProblemList(str(path))
        frame = read_statistics(path, file_problems)
        problems.extend(file_problems.finish())
        if frame is None:
            continue
        for rank, part in _by_rank(frame, _folder_rank(path, root)):
            yield StatisticsPiece(data_type=data_type, rank=rank, frame=part)


def read_statistics(path: Path, problems: ProblemList) -> pd.DataFrame | None:
    """The good rows of one statistics CSV (step as int64, ops as float64), or None."""
    import pandas as pd  # noqa: PLC0415 - the agent never reads monitor CSVs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frame = _quick_read(path, caught)
            if frame is None:
                # A cell that is not a number, a short row leaving a step empty, spaces after
                # commas further down: read it again with the types guessed and the spaces
                # skipped, and let the checks below name the lines.
                caught.clear()
                with open_binary(path) as handle:
                    frame = pd.read_csv(handle, dtype={"name": "category"}, **_READ_OPTIONS)
        except pd.errors.EmptyDataError:
            problems.add(1, "empty file")
            return None
        except (OSError, UnicodeDecodeError, ValueError) as failure:
            problems.add(0, f"cannot read: {failure}")
            return None
    frame.columns = [str(column).strip() for column in frame.columns]
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed:")])
    if "step" not in frame.columns or "name" not in frame.columns:
        problems.add(1, f"header {list(frame.columns)} has no `name` and `step`; file skipped")
        return None
    # One warning of pandas may name several lines ("Skipping line 3: …\nSkipping line 4: …").
    skipped = [match for warning in caught for match in _SKIPPED.finditer(str(warning.message))]
    skipped_lines = {int(match.group(1)) for match in skipped}
    for match in skipped:
        problems.add(
            int(match.group(1)),
            f"{match.group(3)} fields where the header has {match.group(2)}; row skipped",
        )
    return _good_rows(path, frame, skipped_lines, problems)


def _quick_read(path: Path, caught: list[warnings.WarningMessage]) -> pd.DataFrame | None:
    """The file read with its dtypes declared, or None when it must be read the tolerant way.

    Skipping the spaces after commas (`vpp_stage, name, step`) takes pandas off its fast path
    and nearly doubles the time, so it is asked for only when the file's start has such
    spaces; a file without them there that has some further down shows it by a name starting
    with a space or a skipped line, and is read again.
    """
    import pandas as pd  # noqa: PLC0415 - the agent never reads monitor CSVs

    with open_binary(path) as file:
        start = file.read(_SNIFFED_BYTES)
        spaced = b", " in start or b",\t" in start
        options = {**_READ_OPTIONS, "skipinitialspace": spaced}
        file.seek(0)
        header = pd.read_csv(file, nrows=0, **options).columns
        file.seek(0)
        try:
            frame: pd.DataFrame = pd.read_csv(file, dtype=_declared_types(header), **options)
        except (ValueError, OverflowError):
            return None
    if spaced:
        return frame
    names = [column for column in frame.columns if str(column).strip() == "name"]
    categories: list[Any] = list(frame[names[0]].cat.categories) if names else []
    if caught or any(str(name)[:1].isspace() for name in categories):
        return None
    return frame


def _declared_types(header: pd.Index) -> dict[Any, str]:
    """The dtype of each raw column name: name categorical, key columns int64, ops float64
    (the empty columns of a trailing comma are left to pandas)."""
    types = {}
    for column in header:
        name = str(column).strip()
        if name == "name":
            types[column] = "category"
        elif name in KEY_COLUMNS:
            types[column] = "int64"
        elif not name.startswith("Unnamed:"):
            types[column] = "float64"
    return types


def _good_rows(
    path: Path, frame: pd.DataFrame, skipped_lines: set[int], problems: ProblemList
) -> pd.DataFrame:
    import pandas as pd  # noqa: PLC0415 - the agent never reads monitor CSVs

    numeric = [column for column in frame.columns if column != "name"]
    bad = pd.Series(False, index=frame.index)
    for column in numeric:
        if frame[column].dtype.kind not in "fiu":
            raw = frame[column]
            frame[column] = numbers_of(raw)
            bad |= frame[column].isna() & raw.notna()
    keys = [column for column in KEY_COLUMNS if column in frame.columns and column != "name"]
    bad |= frame[[*keys, "name"]].isna().any(axis=1)
    for column in keys:  # a step or stage past 64 bits (or inf) is no step: a damaged row
        if frame[column].dtype.kind not in "iu":
            bad |= ~(frame[column].abs() < 2.0**63)
    ops = [column for column in numeric if column not in KEY_COLUMNS]
    # A short row is read with NaN in its missing cells, like a real NaN statistic: only the
    # rows with a NaN are checked against their line (there are none in a healthy run).
    maybe_short = frame[ops].isna().any(axis=1) & ~bad
    if bad.any() or maybe_short.any():
        bad |= _damaged_rows(path, frame, bad, maybe_short, skipped_lines, problems)
        if bad.any():
            frame = frame[~bad].reset_index(drop=True)
    wanted = {**dict.fromkeys(keys, "int64"), **dict.fromkeys(ops, "float64")}
    if any(frame[column].dtype != kind for column, kind in wanted.items()):
        frame = frame.astype(wanted)
    return frame


def _damaged_rows(
    path: Path,
    frame: pd.DataFrame,
    bad: pd.Series,
    maybe_short: pd.Series,
    skipped_lines: set[int],
    problems: ProblemList,
) -> pd.Series:
    """`bad` with the short rows added; a problem for each, naming its line."""
    lines = decode(read_file(path)).splitlines()
    numbered = [number for number, line in enumerate(lines, 1) if line.strip()]
    data_lines = [number for number in numbered[1:] if number not in skipped_lines]
    width = len(next(csv.reader([lines[numbered[0] - 1]])))
    result: pd.Series = bad.copy()
    for row in frame.index[bad | maybe_short]:
        line = data_lines[row] if row < len(data_lines) else 0
        fields = next(csv.reader([lines[line - 1]])) if line else []
        if len(fields) < width:
            problems.add(line, f"{len(fields)} fields where the header has {width}; row skipped")
            result[row] = True
        elif bad[row]:
            problems.add(line, "a step, stage or statistic that is not a number; row skipped")
    return result


def _by_rank(frame: pd.DataFrame, folder_rank: int) -> Sequence[tuple[int, pd.DataFrame]]:
    """The frame as one piece per rank: its folder's, else the ranks in the tags of `name`
    (each piece named by the module or parameter of the tag alone)."""
    import numpy as np  # noqa: PLC0415 - with pandas
    import pandas as pd  # noqa: PLC0415 - idem

    if folder_rank != UNKNOWN_RANK or frame.empty:
        return [(folder_rank, frame)]
    categories = [str(name) for name in frame["name"].cat.categories]
    tags = [TAG.match(name) for name in categories]
    if not any(tags):
        return [(UNKNOWN_RANK, frame)]
    ranks = np.asarray([tag_rank(tag) for tag in tags])
    plain = [
        name.rsplit("/rank", 1)[0] if tag else name
        for tag, name in zip(tags, categories, strict=True)
    ]
    codes = frame["name"].cat.codes.to_numpy()
    row_ranks = ranks[codes]
    pieces = []
    for rank in sorted({int(rank) for rank in ranks}):
        names = sorted({plain[code] for code in np.flatnonzero(ranks == rank)})
        position = {name: index for index, name in enumerate(names)}
        recode = np.asarray([position.get(name, -1) for name in plain])
        rows = row_ranks == rank
        piece = frame[rows].copy()
        piece["name"] = pd.Categorical.from_codes(recode[codes[rows]], categories=pd.Index(names))
        pieces.append((rank, piece))
    return pieces


def tag_rank(tag: re.Match[str] | None) -> int:
    """The rank a TensorBoard-style tag names; UNKNOWN_RANK without one, or for a number past
    64 bits (no rank is)."""
    rank = fitting_int(tag.group(3)) if tag else None
    return UNKNOWN_RANK if rank is None else rank


def _data_type(path: Path) -> str:
    match = _FILE_NAME.match(path.name)
    return match.group(1) if match else ""


def _csv_order(path: Path) -> tuple[str, str, int]:
    match = _FILE_NAME.match(path.name)
    return (str(path.parent), match.group(1) if match else "", int(match.group(2)) if match else 0)


def _folder_rank(path: Path, root: Path) -> int:
    """The rank in the nearest folder name between the file and `root` (included)."""
    for folder in path.parents:
        match = _RANK_FOLDER.search(folder.name)
        if match:
            rank = fitting_int(match.group(1))
            return UNKNOWN_RANK if rank is None else rank
        if folder == root:
            break
    return UNKNOWN_RANK
