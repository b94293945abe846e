"""How quantities read in a detail line."""

from __future__ import annotations

import pytest

from npuwatch.doctor.wording import (
    are,
    count_of,
    human_age,
    human_bytes,
    human_rate,
    joined,
)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (65536 << 20, "64 GiB"),
        (4175 << 20, "4.1 GiB"),
        (3 << 50, "3 PiB"),
        (5000 << 50, "5000 PiB"),
    ],
)
def test_sizes_use_the_largest_binary_unit(size: int, text: str) -> None:
    assert human_bytes(size) == text


def test_rates_and_ages() -> None:
    assert human_rate(4 << 20) == "4 MiB/s"
    assert [human_age(s) for s in (-3, 12, 300, 7200, 3 * 86_400)] == [
        "0 s",
        "12 s",
        "5 min",
        "2 h",
        "3 d",
    ]


def test_counts_agree_with_their_noun() -> None:
    assert [count_of(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]


def test_lists_read_as_prose() -> None:
    assert [joined(items) for items in (["a"], ["a", "b"], ["a", "b", "c"])] == [
        "a",
        "a and b",
        "a, b and c",
    ]
    assert (are(["a"]), are(["a", "b"])) == ("is", "are")
