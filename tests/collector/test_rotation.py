"""Which file CANN started after which: the next file of a process's log."""

from __future__ import annotations

from npuwatch.collector.rotation import family_of, is_successor

PLOG = "/log/debug/plog"


def test_the_next_file_of_the_same_process_follows_the_one_before() -> None:
    older = f"{PLOG}/plog-2667457_20251210204038191.log"
    newer = f"{PLOG}/plog-2667457_20251210204112004.log"
    assert family_of(older) == (f"{PLOG}/plog-2667457", 20251210204038191)
    assert is_successor(newer, older)
    assert not is_successor(older, newer)
    assert not is_successor(older, older)


def test_another_process_another_folder_or_another_name_is_no_successor() -> None:
    older = f"{PLOG}/plog-2667457_20251210204038191.log"
    assert not is_successor(f"{PLOG}/plog-2667458_20251210204112004.log", older)
    assert not is_successor("/log/debug/device-0/plog-2667457_20251210204112004.log", older)
    assert not is_successor(f"{PLOG}/train_rank0.log", older)
    assert family_of(f"{PLOG}/train_rank0.log") is None
    assert family_of(f"{PLOG}/plog-1_2025.log") is None  # no stamp to the millisecond
