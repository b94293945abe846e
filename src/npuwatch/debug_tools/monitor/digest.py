"""One statistics table of a monitor run (a data type on a rank), digested piece by piece.

A summary of a long run needs little of its millions of rows: the count of rows and names, the
first and last step, the rows with a NaN or inf statistic (none in a healthy run), the rows of
the last step (for the latest gradient norm) and the spikes (`spikes`, which carries only
the last `window` values of each series from one piece to the next). So the files are read one
at a time and each piece is digested then dropped; a whole table in memory is one piece.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from npuwatch.debug_tools.monitor.read_files import KEY_COLUMNS
from npuwatch.debug_tools.monitor.spikes import SeriesIndex, Spike, SpikeSettings, SpikeTracker

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd


class ColumnsDiffer(Exception):
    """A piece whose columns are not those of the table's first piece."""


@dataclass(frozen=True)
class LatestRows:
    """The rows of the last step of a table: their names and norms, in file order."""

    step: int
    names: list[str]
    norms: npt.NDArray[np.float64]


class TableDigest:
    """What the summary needs of one table, from its pieces given in step order."""

    def __init__(self, data_type: str, rank: int, settings: SpikeSettings) -> None:
        self.data_type = data_type
        self.rank = rank
        self.columns: list[str] | None = None
        self.ops: tuple[str, ...] = ()
        self.rows = 0
        self.first_step: int | None = None
        self.last_step: int | None = None
        self._settings = settings
        self._names: set[str] = set()
        self._nan_ops: set[str] = set()
        self.nan_rows: list[tuple[int, str]] = []
        """(step, name) of each row with a NaN or inf statistic or a `nans` count above 0."""
        self._latest: LatestRows | None = None
        self._index = SeriesIndex()
        self._trackers: list[SpikeTracker] = []

    @property
    def names(self) -> int:
        """Parameters or modules named in the table's files."""
        return len(self._names)

    @property
    def nan_ops(self) -> list[str]:
        """The ops with a NaN or inf value (or `nans` above 0), in column order."""
        return [op for op in self.ops if op in self._nan_ops]

    @property
    def latest(self) -> LatestRows | None:
        return self._latest

    def add(self, frame: pd.DataFrame) -> None:
        """Digest the rows of one piece (ColumnsDiffer, spikes.StepsGoBack when the
        piece does not continue the table)."""
        columns = [str(column) for column in frame.columns]
        if self.columns is None:
            self.columns = columns
            self.ops = tuple(column for column in columns if column not in KEY_COLUMNS)
            wanted = (op for op in self._settings.ops if op in self.ops)
            self._trackers = [SpikeTracker(op, self._settings) for op in wanted]
        elif columns != self.columns:
            raise ColumnsDiffer(f"{columns} after {self.columns}")
        self._names.update(str(name) for name in frame["name"].cat.categories)
        if frame.empty:
            return
        steps = frame["step"].to_numpy()
        low, high = int(steps.min()), int(steps.max())
        self.rows += len(frame)
        self.first_step = low if self.first_step is None else min(low, self.first_step)
        self.last_step = high if self.last_step is None else max(high, self.last_step)
        self._find_nans(frame, steps)
        self._keep_latest(frame, steps, high)
        if self._trackers:
            series = self._index.numbers(frame)
            for tracker in self._trackers:
                tracker.add(series, steps, frame[tracker.op].to_numpy(dtype="float64"))

    def spikes(self) -> list[tuple[str, list[Spike]]]:
        """Each tracked op with its spikes, in the order of the settings' ops."""
        with_micro = self.columns is not None and "micro_step" in self.columns
        return [(t.op, t.spikes(self._index, with_micro)) for t in self._trackers]

    def _find_nans(self, frame: pd.DataFrame, steps: npt.NDArray[np.int64]) -> None:
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

        any_bad = np.zeros(len(frame), dtype=bool)
        for op in self.ops:
            values = frame[op].to_numpy(dtype="float64")
            bad = ~np.isfinite(values)
            if op == "nans":
                bad |= values > 0
            if bad.any():
                self._nan_ops.add(op)
                any_bad |= bad
        if any_bad.any():
            names = map(str, frame["name"][any_bad].tolist())
            self.nan_rows.extend(zip(steps[any_bad].tolist(), names, strict=True))

    def _keep_latest(self, frame: pd.DataFrame, steps: npt.NDArray[np.int64], high: int) -> None:
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

        if "norm" not in self.ops or (self._latest and high < self._latest.step):
            return
        last = steps == high
        names = [str(name) for name in frame["name"][last].tolist()]
        norms = frame["norm"].to_numpy(dtype="float64")[last]
        if self._latest and high == self._latest.step:
            names = self._latest.names + names
            norms = np.concatenate([self._latest.norms, norms])
        self._latest = LatestRows(step=high, names=names, norms=norms)
