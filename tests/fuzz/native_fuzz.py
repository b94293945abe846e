"""The atheris harness of the C extensions: each input runs through the instrumented C code and
through its Python reference, and any difference (or a sanitizer report, or a crash) stops the
fuzzer, which saves the input as `crash-<sha1>` under -artifact_prefix.

    python -m tests.fuzz.native_fuzz first-pass --build DIR [libFuzzer options] [CORPUS ...]
    python -m tests.fuzz.native_fuzz block-columns --build DIR -runs=100000

Run from the repository with native_build.environment() (tests/fuzz/test_native_extensions.py
and bench/fuzz.sh do both); an input saved by a failure replays with the same command and the
file instead of a corpus.
"""

from __future__ import annotations

import importlib.util
import sys
from array import array
from collections.abc import Callable
from datetime import timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import atheris

from npuwatch.journal.block_columns import Columns, columns_python, starts_python
from npuwatch.parsers.first_pass import scan_chunk_python
from npuwatch.parsers.slog import SlogRecord
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Record, SourceInfo
from npuwatch.vocabulary import NOTABLE_LEVELS

EXPORTED_FLAGS = 0xFFFF
LEVELS = ("ERROR", "INFO", "DEBUG", "WARNING", "EVENT", None, "")
LOGGERS = ("HCCL", "GE", "RUNTIME", None, "ERROR", "é")
CODES = ("E30009", "EZ9999", "W40001")
EXTREMES = (0, -1, 1, 2**31, 2**32, 2**63 - 1, -(2**63) + 1, 2**63, 2**64, -(2**63) - 1)
"""Integers at the edges of the 64-bit columns. -2**63 itself is left out: it is the columns'
stand-in for None (block_columns.NONE), which the contract assumes no record carries."""


def load_extension(name: str, path: Path) -> ModuleType:
    """The instrumented module at `path` (named as its init function wants: `_speedups`)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gives: ("value", its result) or ("raises", the exception's type name).
    Both implementations must give the same, a failure included (the C pass may raise only
    where its reference does)."""
    try:
        return "value", call()
    except (OverflowError, TypeError, ValueError, MemoryError) as error:
        return "raises", type(error).__name__


def first_pass_input(data: bytes) -> tuple[int, bytes]:
    """(the line cap, the chunk): the first byte sets the cap, the rest is the chunk."""
    if not data:
        return 65536, b""
    return (65536 if data[0] == 255 else data[0] * 4), data[1:]


def first_pass_items(scan: Any, chunk: bytes, cap: int) -> list[Any]:
    clock = LocalClock(timezone.utc)
    items = scan(chunk, 7, SlogRecord, clock.minutes, clock.slog_minute_us, cap, SourceInfo())
    return [item if isinstance(item, tuple) else sorted(vars(item).items()) for item in items]


def check_first_pass(native: ModuleType, data: bytes) -> None:
    cap, chunk = first_pass_input(data)
    by_c = outcome(lambda: first_pass_items(native.scan_chunk, chunk, cap))
    by_python = outcome(lambda: first_pass_items(scan_chunk_python, chunk, cap))
    if by_c != by_python:
        raise AssertionError(
            f"scan_chunk differs from scan_chunk_python on {data!r}:\nC:      {by_c!r}\nPython: {by_python!r}"
        )


def records_from(data: bytes) -> list[Record]:
    """A batch of records with every field the columns read drawn from `data`, extremes and
    None included."""
    provider = atheris.FuzzedDataProvider(data)
    batch = []
    for _ in range(provider.ConsumeIntInRange(0, 24)):
        record = Record(provider.ConsumeUnicode(provider.ConsumeIntInRange(0, 40)), "slog")
        record.timestamp_us = _number(provider)
        record.level = _pick(provider, LEVELS)
        record.logger = _pick(provider, LOGGERS)
        record.pid = _number(provider)
        record.offset = _number(provider)
        record.end_offset = _number(provider)
        record.flags = provider.ConsumeIntInRange(0, 2**20)
        record.error_codes = [
            CODES[i % len(CODES)]
            for i in provider.ConsumeIntListInRange(provider.ConsumeIntInRange(0, 3), 0, 5)
        ]
        batch.append(record)
    return batch


def _pick(provider: Any, values: tuple[Any, ...]) -> Any:
    index = provider.ConsumeIntInRange(0, len(values))
    return values[index] if index < len(values) else provider.ConsumeUnicode(3)


def _number(provider: Any) -> int | None:
    kind = provider.ConsumeIntInRange(0, 3)
    if kind == 0:
        return None
    if kind == 1:
        return EXTREMES[provider.ConsumeIntInRange(0, len(EXTREMES) - 1)]
    return provider.ConsumeIntInRange(-(2**63) + 1, 2**63 - 1)


def check_block_columns(native: ModuleType, data: bytes) -> None:
    batch = records_from(data)

    def by_c() -> tuple[Columns, list[Any]]:
        columns = Columns._make(native.block_columns(batch, NOTABLE_LEVELS, EXPORTED_FLAGS))
        return columns, list(columns.pairs)

    def by_python() -> tuple[Columns, list[Any]]:
        columns = columns_python(batch, NOTABLE_LEVELS, EXPORTED_FLAGS)
        return columns, list(columns.pairs)

    if outcome(by_c) != outcome(by_python):
        raise AssertionError(
            f"block_columns differs from columns_python on {data!r}:\nC:      {outcome(by_c)!r}\nPython: {outcome(by_python)!r}"
        )
    lengths = array("I", data[: len(data) // 4 * 4])
    if native.text_starts(lengths) != starts_python(lengths):
        raise AssertionError(f"text_starts differs from starts_python on {data!r}")


CHECKS: dict[str, tuple[str, Callable[[ModuleType, bytes], None]]] = {
    "first-pass": ("_speedups", check_first_pass),
    "block-columns": ("_columns", check_block_columns),
}


def main(argv: list[str]) -> None:
    target, build_flag, build = argv[1], argv[2], Path(argv[3])
    if target not in CHECKS or build_flag != "--build":
        raise SystemExit(__doc__)
    name, check = CHECKS[target]
    path = next(build.glob(f"{name}.*.so"))
    native = load_extension(name, path)
    atheris.Setup([argv[0], *argv[4:]], lambda data: check(native, data))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
