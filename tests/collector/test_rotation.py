"""Which file CANN started after which: the next file of a process's log."""

from __future__ import annotations

from npuwatch.collector.rotation import family_of

PLOG = "/log/debug/plog"


def test_a_process_s_files_are_one_family_ordered_by_their_stamps() -> None:
    older = family_of(f"{PLOG}/plog-2667457_20251210204038191.log")
    newer = family_of(f"{PLOG}/plog-2667457_20251210204112004.log")
    assert older == (f"{PLOG}/plog-2667457", 20251210204038191)
    assert newer is not None and newer[0] == older[0] and newer[1] > older[1]


def test_another_process_another_folder_or_another_name_is_another_family() -> None:
    family = family_of(f"{PLOG}/plog-2667457_20251210204038191.log")
    assert family is not None
    for other in (
        f"{PLOG}/plog-2667458_20251210204112004.log",
        "/log/debug/device-0/plog-2667457_20251210204112004.log",
    ):
        found = family_of(other)
        assert found is not None and found[0] != family[0]
    assert family_of(f"{PLOG}/train_rank0.log") is None
    assert family_of(f"{PLOG}/plog-1_2025.log") is None  # no stamp to the millisecond
