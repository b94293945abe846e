"""The monitor summary's series numbers: one per (parameter, micro step), the same across
pieces, whatever the micro steps of a damaged file hold."""

from __future__ import annotations

import pandas as pd

from npuwatch.debug_tools.monitor.spikes import SeriesIndex


def frame(names: list[str], micro: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"name": pd.Categorical(names), "micro_step": micro})


def test_each_name_and_micro_step_is_one_series_across_pieces() -> None:
    index = SeriesIndex()
    first = index.numbers(frame(["w", "b", "w", "w"], [0, 0, 1, 0])).tolist()
    assert first[0] == first[3] and len(set(first)) == 3
    again = index.numbers(frame(["b", "w"], [0, 1])).tolist()
    assert again == [first[1], first[2]]


def test_micro_steps_too_far_apart_for_one_key_are_numbered_all_the_same() -> None:
    """Found by the fuzzer: micro steps of 9e18 and -9e18 overflowed the one-key product and
    the summary died with a traceback."""
    far = [9_000_000_000_000_000_000, -9_000_000_000_000_000_000, 9_000_000_000_000_000_000]
    numbers = SeriesIndex().numbers(frame(["w", "w", "b"], far)).tolist()
    assert len(set(numbers)) == 3
    index = SeriesIndex()
    twice = index.numbers(frame(["w", "w"], [far[0], far[0]])).tolist()
    assert twice[0] == twice[1]
    assert index.names == ["w"] and index.micro_steps == [far[0]]
