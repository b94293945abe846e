"""Parser throughput on a generated 1M-line tree in the real CANN formats.

Prints lines/s and MB/s for
  (a)  parsing into records in memory (header, time, codes; body fields derived on access),
  (a2) the same, then deriving every record's body fields (message, origin, thread, tags),
  (b)  `npuwatch scan` end to end, as a separate process (wall time, CPU time, peak RSS),
  (c)  a plain `re.match` loop over the same lines: the reference, measured in the same run,
and (a) once more with the pure-Python first pass, for hosts where the C extension is not built.

    python bench/parse_bench.py [--lines 1000000] [--tree DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_tree import write_tree
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import LocalClock, StreamParser, first_pass
from npuwatch.parsers.first_pass import scan_chunk_python

REFERENCE = re.compile(r"\[(\w+)\] (\w+)\((-?\d+),([^)]*)\):(\S+) (.*)")


def files_of(root: Path) -> list[tuple[str, bytes]]:
    return [(str(p), p.read_bytes()) for p in sorted(root.rglob("*.log"))]


def parse_all(files: list[tuple[str, bytes]], derive: bool) -> int:
    clock = LocalClock(timezone.utc)
    records = 0
    for path, data in files:
        parser = StreamParser(clock, path=path)
        parsed = parser.feed(data) + parser.flush()
        if derive:
            for record in parsed:
                record.message  # noqa: B018 - derives all body fields
        records += len(parsed)
    return records


def timed(function, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def run_scan(root: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (KiB) of `npuwatch scan` in its own process.

    GNU time reports the RSS of the exec'd command itself; the rusage of a child forked from
    this process would include the pages it inherited from the benchmark.
    """
    wall = time.perf_counter()
    result = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%U %S %M",
            sys.executable,
            "-m",
            "npuwatch",
            "scan",
            str(root),
            "--json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - wall
    user, system, peak = result.stderr.strip().splitlines()[-1].split()
    return wall, float(user) + float(system), int(peak)


def reference_loop(files: list[tuple[str, bytes]]) -> None:
    match = REFERENCE.match
    for _, data in files:
        for line in data.decode("utf-8").split("\n"):
            match(line)


def report(label: str, lines: int, size: int, seconds: float, extra: str = "") -> None:
    print(
        f"{label:58} {lines / seconds:>11,.0f} lines/s {size / seconds / 1e6:>7.1f} MB/s"
        f"  ({seconds:.2f} s CPU){extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--tree", type=Path, help="reuse or create the tree here")
    args = parser.parse_args()
    tune_garbage_collector()  # as the command line does
    with tempfile.TemporaryDirectory() as scratch:
        root = args.tree or Path(scratch) / "ascend-log"
        if not root.exists() or not any(root.rglob("*.log")):
            write_tree(root, args.lines)
        files = files_of(root)
        lines = sum(data.count(b"\n") for _, data in files)
        size = sum(len(data) for _, data in files)
        print(
            f"tree: {root}, {len(files)} files, {lines:,} lines, {size / 1e6:.1f} MB "
            f"({size / lines:.0f} bytes a line); C first pass: {first_pass.NATIVE}"
        )
        print(f"python {sys.version.split()[0]}, one core of {os.cpu_count()}")

        seconds, records = timed(parse_all, files, False)
        report("(a)  parse into records in memory", lines, size, seconds, f", {records:,} records")
        seconds, _ = timed(parse_all, files, True)
        report("(a2) parse and derive every body field", lines, size, seconds)

        wall, cpu, peak_kib = run_scan(root)
        report(
            "(b)  npuwatch scan end to end (wall time)",
            lines,
            size,
            wall,
            f", CPU {cpu:.2f} s = {100 * cpu / wall:.0f}% of a core, "
            f"peak RSS {peak_kib / 1024:.0f} MB",
        )

        seconds, _ = timed(reference_loop, files)
        report("(c)  reference: plain re.match loop over the lines", lines, size, seconds)

        first_pass_in_use = first_pass.scan_chunk
        from npuwatch.parsers import stream

        stream.scan_chunk = scan_chunk_python  # type: ignore[assignment]
        try:
            seconds, _ = timed(parse_all, files, False)
        finally:
            stream.scan_chunk = first_pass_in_use  # type: ignore[assignment]
        report("(a)  without the C first pass (pure Python)", lines, size, seconds)


if __name__ == "__main__":
    main()
