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
running minimum over the whole sorted column); the exact median is then taken for those
candidates only, which in a healthy run are few.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def find_spikes(frame: pd.DataFrame, op: str, settings: SpikeSettings) -> list[Spike]:
    """The spikes of column `op` of one statistics table, by step then name."""
    import numpy as np  # noqa: PLC0415 - with pandas, only for the monitor command
    import pandas as pd  # noqa: PLC0415 - idem

    window = settings.window
    if frame.empty:
        return []
    names = frame["name"].cat.codes.to_numpy().astype("int64")
    series = names
    micro = frame["micro_step"].to_numpy() if "micro_step" in frame.columns else None
    if micro is not None:
        series = names * (int(micro.max()) + 1) + (micro - int(micro.min()))
    steps = frame["step"].to_numpy()
    order = np.lexsort((steps, series))
    raw = frame[op].to_numpy(dtype="float64")
    values = np.abs(raw[order])
    values[~np.isfinite(values)] = np.nan
    ordered = series[order]
    count = len(values)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first_of_series = np.repeat(starts, np.diff(np.r_[starts, count]))
    position = np.arange(count) - first_of_series
    lowest = (
        pd.Series(values).rolling(window, min_periods=max(1, window // 2)).min().shift(1).to_numpy()
    )
    with np.errstate(invalid="ignore"):
        candidates = np.flatnonzero((position >= window) & (values > settings.ratio * lowest))
    if candidates.size == 0:
        return []
    windows = np.lib.stride_tricks.sliding_window_view(values, window)[candidates - window]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        # A window of NaN alone has no median: numpy warns, and that candidate is no spike.
        warnings.simplefilter("ignore", RuntimeWarning)
        baseline = np.nanmedian(windows, axis=1)
        hit = (baseline > 0) & (values[candidates] > settings.ratio * baseline)
    rows = order[candidates[hit]]
    categories = frame["name"].cat.categories
    found = [
        Spike(
            step=int(steps[row]),
            name=str(categories[names[row]]),
            micro_step=int(micro[row]) if micro is not None else None,
            value=float(raw[row]),
            baseline=float(median),
        )
        for row, median in zip(rows, baseline[hit], strict=True)
    ]
    return sorted(found, key=lambda spike: (spike.step, spike.name, spike.micro_step or 0))
