"""Write a large ~/ascend/log tree from real CANN log lines, for the side-by-side benchmarks.

    python bench/real_tree.py /tmp/real-tree [--lines 1000000] [--seed 7]

`bench/make_tree.py` draws from a few templates per body style; this draws from the real log
excerpts of `../shared/real-logs` (when that folder is beside the checkout; else from the
project's own fixture trees, written in the same formats): every format variant, the multi-line
blocks (HCCL's link tables, AI Core exception dumps, tracebacks), the EVENT lines and the pastes'
damage, as a failing job writes them. The excerpts are cut into records (a line and the lines
that continue it, which do not start with `[`), and the tree is filled with records drawn from
them, the INFO and DEBUG ones weighted up (INFO_WEIGHT) so that about 4 % of the lines are
ERROR records, as in a job that failed; each file is one process: its pid is written into every
header, and the header times advance from a start through the file. Nothing of the excerpts is
kept in the repository: the tree is written where asked, and is deterministic for a seed.
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REAL_LOGS = REPO.parent / "shared" / "real-logs"
FIXTURE_TREES = REPO / "fixtures" / "trees"

FILES = 16
INFO_WEIGHT = 30
"""How much likelier an INFO or DEBUG record is drawn than any other: the excerpts were cut
around failures (a quarter of their lines are ERROR), a failing job's log is mostly INFO."""

_HEADER = re.compile(
    rb"^(\[[A-Z]+\] ?[A-Za-z0-9_]+\()(-?\d+)(,[^)]*\):)"
    rb"(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3})"
)
_LEVEL = re.compile(rb"^\[([A-Z]+)\]")


def sources() -> tuple[str, list[Path]]:
    """The excerpts to draw from, and what they are."""
    real = sorted(REAL_LOGS.glob("*.log")) if REAL_LOGS.is_dir() else []
    if real:
        return f"the real excerpts of {REAL_LOGS}", real
    return f"the fixture trees of {FIXTURE_TREES}", sorted(FIXTURE_TREES.rglob("*.log"))


def records_of(paths: list[Path]) -> list[bytes]:
    """Each excerpt cut into records: a line starting with `[` and the lines after it that do
    not (a paste's `path:` prefix or a lost bracket starts a record of its own)."""
    records: list[bytes] = []
    for path in paths:
        current: list[bytes] = []
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            if line.startswith(b"[") and current:
                records.append(b"\n".join(current) + b"\n")
                current = []
            current.append(line)
        if current:
            records.append(b"\n".join(current) + b"\n")
    return records


def weight_of(record: bytes) -> int:
    level = _LEVEL.match(record)
    return INFO_WEIGHT if level is not None and level.group(1) in (b"INFO", b"DEBUG") else 1


def placed(record: bytes, pid: bytes, stamp: bytes) -> bytes:
    """The record with this process's pid and this time in every header it holds."""
    out: list[bytes] = []
    for line in record.split(b"\n"):
        out.append(_HEADER.sub(lambda m: m.group(1) + pid + m.group(3) + stamp, line, count=1))
    return b"\n".join(out)


def stamps(start: datetime, step_us: int) -> Iterator[bytes]:
    at = start
    while True:
        yield (
            f"{at:%Y-%m-%d-%H:%M:%S}.{at.microsecond // 1000:03d}.{at.microsecond % 1000:03d}"
        ).encode()
        at += timedelta(microseconds=step_us)


def write_tree(root: Path, lines: int, seed: int = 7) -> tuple[str, int, int]:
    """The tree under `root`/ascend/log/debug/plog; what it was drawn from, lines and bytes
    written."""
    what, paths = sources()
    records = records_of(paths)
    if not records:
        raise SystemExit(f"no log lines in {what}")
    weights = [weight_of(record) for record in records]
    chosen = random.Random(seed)
    folder = root / "ascend" / "log" / "debug" / "plog"
    folder.mkdir(parents=True, exist_ok=True)
    per_file = lines // FILES
    written_lines = written_bytes = 0
    start = datetime(2026, 3, 1, 8, 0, 0)
    for n in range(FILES):
        pid = 2_400_000 + 97 * n
        clock = stamps(start + timedelta(milliseconds=n), 3_600_000_000 // max(per_file, 1))
        parts: list[bytes] = []
        count = 0
        while count < per_file:
            for record in chosen.choices(records, weights, k=1024):
                parts.append(placed(record, str(pid).encode(), next(clock)))
                count += record.count(b"\n")
                if count >= per_file:
                    break
        data = b"".join(parts)
        name = f"plog-{pid}_{start:%Y%m%d%H%M%S}{n:03d}.log"
        (folder / name).write_bytes(data)
        written_lines += count
        written_bytes += len(data)
    return what, written_lines, written_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    what, lines, size = write_tree(args.root, args.lines, args.seed)
    print(f"{args.root}: {lines:,} lines, {size / 1e6:.1f} MB, drawn from {what}")


if __name__ == "__main__":
    main()
