"""Parser and rule throughput on a generated 1M-line tree in the real CANN formats.

Prints lines/s and MB/s for
  (a)  parsing into records in memory (header, time, codes; body fields derived on access),
  (a2) the same, then deriving every record's body fields (message, origin, thread, tags),
  (r)  reading and parsing the files, without and with the default rule packs, and the share
       of throughput the rules cost,
  (b)  `npuwatch scan` end to end, as a separate process (wall time, CPU time, peak RSS),
       with the default rules and with --no-rules,
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
from npuwatch.collector.files import CHUNK_BYTES, line_chunks, read_chunks
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import first_pass
from npuwatch.parsers.first_pass import scan_chunk_python
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules
from npuwatch.untrusted_files import open_binary

REFERENCE = re.compile(r"\[(\w+)\] (\w+)\((-?\d+),([^)]*)\):(\S+) (.*)")


def files_of(root: Path) -> list[tuple[str, bytes]]:
    return [(str(p), p.read_bytes()) for p in sorted(root.rglob("*.log"))]


def parse_all(files: list[tuple[str, bytes]], derive: bool) -> int:
    """Parse data already in memory, in the 4 MiB chunks the commands read."""
    clock = LocalClock(timezone.utc)
    records = 0
    for path, data in files:
        parser = StreamParser(clock, path=path)
        offset = 0
        for chunk in line_chunks(
            data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)
        ):
            parsed = parser.feed(chunk, offset)
            offset += len(chunk)
            if derive:
                for record in parsed:
                    record.message  # noqa: B018 - derives all body fields
            records += len(parsed)
        records += len(parser.flush())
    return records


def best_of(runs: int, function, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    """The fastest of several runs: this VM's timings vary by 10 % and more between runs."""
    return min((timed(function, *args) for _ in range(runs)), key=lambda result: result[0])


def timed(function, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def read_and_parse(files: list[Path], engine: RuleEngine | None) -> int:
    """Read and parse every file in chunks, as the commands do; with rules when given."""
    clock = LocalClock(timezone.utc)
    events = 0
    for path in files:
        parser = StreamParser(clock, path=str(path), batch_index=engine is not None)
        stream = engine.stream(parser.source) if engine is not None else None
        offset = 0
        with open_binary(path) as handle:
            for chunk in read_chunks(handle):
                records = parser.feed(chunk, offset)
                offset += len(chunk)
                if engine is not None and stream is not None:
                    engine.process(records, stream, chunk, parser.last_batch)
        records = parser.flush()
        if engine is not None and stream is not None:
            engine.process(records, stream, hints=parser.last_batch)
            stream.close()
    if engine is not None:
        events = len(engine.flush())
    return events


def run_scan(root: Path, *options: str, as_json: bool = True) -> tuple[float, float, int]:
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
            *(["--json"] if as_json else []),
            *options,
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

        seconds, records = best_of(3, parse_all, files, False)
        report("(a)  parse into records in memory", lines, size, seconds, f", {records:,} records")
        seconds, _ = timed(parse_all, files, True)
        report("(a2) parse and derive every body field", lines, size, seconds)

        paths = sorted(root.rglob("*.log"))
        rules = load_rules(default_locations(system=Path("/nonexistent")))
        best_plain = best_rules = float("inf")
        events = 0
        for _ in range(5):  # best of five: this VM's timings vary by 10 % and more
            best_plain = min(best_plain, timed(read_and_parse, paths, None)[0])
            seconds, events = timed(read_and_parse, paths, RuleEngine(rules))
            best_rules = min(best_rules, seconds)
        report("(r)  read + parse", lines, size, best_plain)
        report(
            f"(r)  read + parse + {len(rules.rules)} default rules",
            lines,
            size,
            best_rules,
            f", {events} events",
        )
        print(
            f"     the rules cost {100 * (1 - best_plain / best_rules):.0f}% of the throughput "
            f"(target: at most 25%)"
        )

        for label, options in (("with rules", ()), ("--no-rules", ("--no-rules",))):
            wall, cpu, peak_kib = run_scan(root, *options)
            report(
                f"(b)  npuwatch scan {label} (wall time)",
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
            seconds, _ = best_of(3, parse_all, files, False)
        finally:
            stream.scan_chunk = first_pass_in_use  # type: ignore[assignment]
        report("(a)  without the C first pass (pure Python)", lines, size, seconds)


if __name__ == "__main__":
    main()
