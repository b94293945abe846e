"""Spikes in monitor statistics: a step whose value jumps far above the steps before it.

The test is a ratio to the rolling median: a step is a spike when `|value| > ratio ×
median(|value| over the previous `window` steps of the same series)`, a series being one
parameter (or module and micro step) of one data type on one rank. A ratio rather than
median + k·MAD because it is what msprobe's own AnomalyTurbulence does (a value far from its
recent average, in proportion), it needs no spread estimate that a flat series would make
zero, and it reads plainly ("12× the median"). A series is judged only once it has a full
window behind it; NaN and inf are NaN findings, not spikes, and are left out of the medians.

A 100,000-step × 64-parameter run is 6.4 million values per op: a rolling median over all of
them would cost more than reading the files. Since the median of a window is never below its
minimum, a value can only be a spike if it exceeds ratio × the rolling minimum (a cheap
running minimum over the sorted column); the exact median is then taken for those candidates
only, which in a healthy run are few.

The run is read one step-range file at a time, so a `SpikeTracker` takes the rows piece after
piece and carries from one to the next only the last `window` values of each series: the
spikes it finds are the ones the whole table would give, as long as each piece's steps do not
go back before the previous piece's (`SpikeTracker.add` says when they do).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

DEFAULT_RATIO = 3.0
DEFAULT_WINDOW = 20
DEFAULT_OPS = ("norm",)


@dataclass(frozen=True)
class SpikeSettings:
    """When a value counts as a spike, and for which ops (see the module docstring)."""

    ratio: float = DEFAULT_RATIO
    window: int = DEFAULT_WINDOW
    ops: tuple[str, ...] = DEFAULT_OPS


@dataclass(frozen=True)
class Spike:
    """One step of one series that jumped above ratio × its recent median."""

    step: int
    name: str
    micro_step: int | None
    value: float
    baseline: float
    """The median of |value| over the previous `window` steps of the series."""

    @property
    def times(self) -> float:
        return abs(self.value) / self.baseline


class StepsGoBack(Exception):
    """A piece whose steps start before the last step of the pieces already given."""


_ONE_KEY_LIMIT = 2**62
"""Below it, a (name, micro step) pair is one int64 key: code × span + micro step."""


class SeriesIndex:
    """A number for each series (parameter, or module and micro step) of one table, stable
    across pieces whose categories differ."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, int], int] = {}
        self.names: list[str] = []
        self.micro_steps: list[int] = []

    def numbers(self, frame: pd.DataFrame) -> np.ndarray:
        """The series number of each row of `frame` (int64)."""
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

        codes = frame["name"].cat.codes.to_numpy().astype("int64")
        categories = [str(name) for name in frame["name"].cat.categories]
        if "micro_step" not in frame.columns:
            by_code = [self._number(name, 0) for name in categories]
            numbers: np.ndarray = np.asarray(by_code, dtype="int64")[codes]
            return numbers
        # One int64 key per (name, micro step) pair: a 1-D unique is a cheap sort, where a
        # unique over rows of pairs (axis=0) costs more than reading the file.
        micro = frame["micro_step"].to_numpy().astype("int64")
        lowest = int(micro.min()) if len(micro) else 0
        span = int(micro.max()) - lowest + 1 if len(micro) else 1
        if span * max(len(categories), 1) >= _ONE_KEY_LIMIT:
            # Micro steps so far apart (a damaged file: 9e18 and -9e18) that the pairs do not
            # fit one int64 key: the unique over rows of pairs, slower but exact.
            pairs, inverse = np.unique(
                np.stack([codes, micro], axis=1), axis=0, return_inverse=True
            )
            by_pair = [self._number(categories[code], int(step)) for code, step in pairs]
            return np.asarray(by_pair, dtype="int64")[inverse.reshape(-1)]
        keys, inverse = np.unique(codes * span + (micro - lowest), return_inverse=True)
        mapping = np.asarray(
            [self._number(categories[key // span], int(key % span) + lowest) for key in keys],
            dtype="int64",
        )
        numbers = mapping[inverse.reshape(-1)]
        return numbers

    def _number(self, name: str, micro_step: int) -> int:
        number = self._numbers.setdefault((name, micro_step), len(self.names))
        if number == len(self.names):
            self.names.append(name)
            self.micro_steps.append(micro_step)
        return number


class SpikeTracker:
    """The spikes of one op of one table, given its rows piece by piece in step order."""

    def __init__(self, op: str, settings: SpikeSettings) -> None:
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

        self.op = op
        self._settings = settings
        self._seen = np.zeros(0, dtype="int64")
        """Rows given so far, per series number."""
        self._tail_series = np.zeros(0, dtype="int64")
        self._tail_values = np.zeros(0, dtype="float64")
        """The last `window` |values| of each series (NaN for NaN and inf), by series."""
        self._last_step: int | None = None
        self._found: list[tuple[int, int, float, float]] = []
        """(series, step, value, baseline) of each spike."""

    def add(self, series: np.ndarray, steps: np.ndarray, raw: np.ndarray) -> None:
        """Judge the rows of one piece: series numbers, steps and the op's values."""
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command
        import pandas as pd  # noqa: PLC0415 - idem

        if len(steps) == 0:
            return
        first, last = int(steps.min()), int(steps.max())
        if self._last_step is not None and first < self._last_step:
            raise StepsGoBack(f"step {first} after step {self._last_step}")
        self._last_step = last if self._last_step is None else max(last, self._last_step)
        window = self._settings.window
        values = np.abs(raw)
        values[~np.isfinite(values)] = np.nan
        tail = len(self._tail_series)
        every_series = np.concatenate([self._tail_series, series])
        every_value = np.concatenate([self._tail_values, values])
        if bool((np.diff(steps) >= 0).all()):
            # Rows already in step order (as msprobe writes them): a stable sort by series
            # keeps that order, as sorting by series then step would.
            order = np.argsort(every_series, kind="stable")
        else:
            tail_steps = np.full(tail, first, dtype="int64")
            order = np.lexsort((np.concatenate([tail_steps, steps]), every_series))
        ordered = every_series[order]
        ordered_values = every_value[order]
        count = len(order)
        size = max(int(series.max()) + 1, len(self._seen))
        seen = np.zeros(size, dtype="int64")
        seen[: len(self._seen)] = self._seen
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        lengths = np.diff(np.r_[starts, count])
        first_of_series = np.repeat(starts, lengths)
        # The position of a row in its whole series: the tail holds min(window, seen) rows.
        earlier = seen - np.minimum(seen, window)
        position = np.arange(count) - first_of_series + earlier[ordered]
        lowest = (
            pd.Series(ordered_values)
            .rolling(window, min_periods=max(1, window // 2))
            .min()
            .shift(1)
            .to_numpy()
        )
        with np.errstate(invalid="ignore"):
            candidates = np.flatnonzero(
                (order >= tail)
                & (position >= window)
                & (ordered_values > self._settings.ratio * lowest)
            )
        if candidates.size:
            self._judge(candidates, order - tail, ordered, ordered_values, steps, raw)
        from_end = np.repeat(starts + lengths, lengths) - 1 - np.arange(count)
        keep = from_end < window
        self._tail_series = ordered[keep]
        self._tail_values = ordered_values[keep]
        self._seen = seen + np.bincount(series, minlength=size)

    def _judge(
        self,
        candidates: np.ndarray,
        rows: np.ndarray,
        ordered: np.ndarray,
        ordered_values: np.ndarray,
        steps: np.ndarray,
        raw: np.ndarray,
    ) -> None:
        """Keep the candidates above ratio × the exact median of their window."""
        import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

        window = self._settings.window
        windows = np.lib.stride_tricks.sliding_window_view(ordered_values, window)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            # A window of NaN alone has no median: numpy warns, and that candidate is no spike.
            warnings.simplefilter("ignore", RuntimeWarning)
            baseline = np.nanmedian(windows[candidates - window], axis=1)
            hit = (baseline > 0) & (ordered_values[candidates] > self._settings.ratio * baseline)
        for place, median in zip(candidates[hit], baseline[hit], strict=True):
            row = int(rows[place])
            self._found.append(
                (int(ordered[place]), int(steps[row]), float(raw[row]), float(median))
            )

    def spikes(self, index: SeriesIndex, with_micro_step: bool) -> list[Spike]:
        """The spikes found so far, by step then name."""
        found = [
            Spike(
                step=step,
                name=index.names[series],
                micro_step=index.micro_steps[series] if with_micro_step else None,
                value=value,
                baseline=baseline,
            )
            for series, step, value, baseline in self._found
        ]
        return sorted(found, key=lambda spike: (spike.step, spike.name, spike.micro_step or 0))


def find_spikes(frame: pd.DataFrame, op: str, settings: SpikeSettings) -> list[Spike]:
    """The spikes of column `op` of one whole statistics table, by step then name."""
    import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command

    if frame.empty:
        return []
    index = SeriesIndex()
    tracker = SpikeTracker(op, settings)
    steps = frame["step"].to_numpy()
    order = np.argsort(steps, kind="stable")
    # One whole table may hold its steps in any order; sorted, it is a single piece in order.
    tracker.add(index.numbers(frame)[order], steps[order], frame[op].to_numpy("float64")[order])
    return tracker.spikes(index, "micro_step" in frame.columns)
