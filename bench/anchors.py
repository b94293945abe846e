"""npuwatch beside the tools it is measured against, in one run, on a tree of real-format lines.

    python bench/anchors.py [--work /tmp/npuwatch-anchors] [--lines 1000000] [--rounds 3]
                            [--only grep|scan]

The tree is written once by bench/real_tree.py (real CANN lines from ../shared/real-logs, else
from the fixture trees) and journaled once by the real agent with its defaults. Then, in
interleaved rounds (min and median of --rounds), each figure beside its reference:

  scan          `npuwatch scan` of the tree, the text report (CPU seconds, start-up included; its
                --json is 181 MB on this tree, and writing it would be most of the time), against
                a plain Python loop over the same files: one header regular expression,
                `groupdict()` and a code `findall` a line (what a hand-written log summariser does
                at least);
  scan --no-rules  the same without the rules: what parsing and folding cost alone;
  scan, even    the same on the tree of bench/make_tree.py (1M lines of a few even templates, made
                once under WORK/even): the issue asks scan to stay within 0.8× the loop there;
  start-up      `npuwatch scan` of an empty folder, wall time: what every command pays first;
  grep literal  `npuwatch grep PATTERN --journal …` printing the matching lines, against
                `rg PATTERN TREE` (and `rg -j1`, one thread) over the raw files, warm cache, wall
                time of the whole command;
  grep regex    the same with a regular expression;
  grep cold     both grep questions again after the logs and the journal are evicted from the
                page cache (posix_fadvise DONTNEED on each of their files; the interpreter and
                npuwatch's own files stay cached, as on a host that runs commands often);
  journal size  the journal's bytes on disk against the logs', and what holds them (SQLite's
                dbstat: blocks, the notable-record index, events);
  shipping      building, serialising and writing the bulk body of the first --ship-records
                records' documents (journal blocks → `block_actions` → the bulk lines, through
                the serializer the sink gives opensearch-py: sinks/search/fast_json.py), CPU
                per document, against `json.dumps` (and orjson when installed) of the same
                documents built beforehand;
  events read   reading every event back as shipping does (the context put back from the blocks,
                journal/event_context.py), CPU, against `json.loads` of the same documents (what
                shipping does with each next).

rg is used when it is on PATH. The other anchors of the performance issue have their own
benchmarks: the agent's flood beside Fluent Bit (bench/agent_bench.py flood --fluent-bit PATH, or
$FLUENT_BIT; bench/build_fluent_bit.sh builds one), shipping into a node (bench/ship_bench.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opensearchpy.serializer import JSONSerializer

from grep_bench import journal_with_agent
from make_tree import write_tree as write_even_tree
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.segment import StoredBlock
from npuwatch.sinks.search.documents import block_actions
from npuwatch.sinks.search.fast_json import opensearch_serializer
from parse_bench import run_scan
from real_tree import write_tree

LITERAL = "Aicore kernel execute failed"
REGEX = r"Task run failed, device_id=\d+, stream_id=4\d"

_HEADER = re.compile(
    r"\[(?P<level>\w+)\] (?P<module>\w+)\((?P<pid>-?\d+),(?P<name>[^)]*)\):(?P<time>\S+) "
    r"(?P<body>.*)"
)
_CODE = re.compile(r"\b(?:E[A-Z0-9]\d{4}|W[A-Z0-9]\d{4}|ERR\d{5})\b")


@dataclass
class Figures:
    """Seconds of each measurement, a list per name (one a round)."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.seconds.setdefault(name, []).append(value)

    def best(self, name: str) -> float:
        return min(self.seconds[name])

    def span(self, name: str) -> str:
        values = self.seconds[name]
        return f"{min(values):.3f}–{statistics.median(values):.3f} s"


def build(work: Path, lines: int) -> tuple[Path, Path, int, int]:
    """The tree and the journal (made once); the tree's lines and bytes."""
    tree, state = work / "tree", work / "state"
    marker = work / "built"
    if not marker.exists():
        shutil.rmtree(work, ignore_errors=True)
        what, written, size = write_tree(tree, lines)
        print(f"tree: {written:,} lines, {size / 1e6:.0f} MB under {tree}, drawn from {what}")
        records, elapsed, _ = journal_with_agent(tree, state, work)
        print(f"journal: {records:,} records in {elapsed:.1f} s by the agent")
        marker.write_text(f"{written} {size}\n", encoding="utf-8")
    written, size = (int(n) for n in marker.read_text(encoding="utf-8").split())
    return tree, state / "journal", written, size


def even_tree(work: Path, lines: int) -> Path:
    """bench/make_tree.py's tree (made once): few templates, evenly mixed, few errors."""
    tree, marker = work / "even", work / "even-built"
    if not marker.exists():
        shutil.rmtree(tree, ignore_errors=True)
        size = write_even_tree(tree, lines, 7)
        print(f"even tree: {lines:,} lines, {size / 1e6:.0f} MB under {tree}")
        marker.touch()
    return tree


def reference_scan(tree: Path) -> float:
    """CPU seconds of the plain loop over every file of the tree."""
    started = time.process_time()
    match, findall = _HEADER.match, _CODE.findall
    levels: dict[str, int] = {}
    for path in sorted(tree.rglob("*.log")):
        for line in path.read_text("utf-8", errors="replace").split("\n"):
            found = match(line)
            if found is not None:
                fields = found.groupdict()
                levels[fields["level"]] = levels.get(fields["level"], 0) + 1
                findall(line)
    return time.process_time() - started


def table_bytes(journal: Path) -> dict[str, int]:
    """Bytes on disk per table of the journal's segments, its indexes counted with it."""
    owners = {"notable_by_level": "notable", "notable_by_time": "notable",
              "notable_codes": "notable", "notable_codes_by_code": "notable",
              "sqlite_autoindex_events_1": "events", "blocks_by_last": "blocks"}  # fmt: skip
    found: dict[str, int] = {}
    for path in sorted(journal.glob("segment-*.db")):
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            try:
                rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
            except sqlite3.OperationalError:  # an SQLite built without the dbstat table
                return {}
        for name, size in rows:
            owner = owners.get(name, name)
            found[owner] = found.get(owner, 0) + int(size)
    return found


def read_events(journal: Path) -> tuple[int, float, float]:
    """Events in the journal, CPU seconds to read them all back whole, and CPU seconds of
    `json.loads` of the same documents."""
    documents: list[str] = []
    started = time.process_time()
    with JournalReader(journal) as reader:
        position = Position()
        while page := reader.event_rows_after(position, 256):
            documents.extend(document for _, _, document in page)
            position = page[-1][0]
    read = time.process_time() - started
    started = time.process_time()
    for document in documents:
        json.loads(document)
    return len(documents), read, time.process_time() - started


def ship_build(journal: Path, records: int) -> tuple[int, float, dict[str, float]]:
    """Documents built, CPU seconds to build and serialise them into bulk lines, and the CPU
    seconds of each reference serialiser over the same documents built beforehand."""
    serializer = opensearch_serializer() or JSONSerializer()  # what the sink's client uses
    # As the sink does, each page's bulk body is built, handed on and dropped: holding every
    # document until the end would make the collector walk them all again and again.
    shipped = 0
    started = time.process_time()
    for page in _block_pages(journal, records):
        body: list[str] = []
        for block in page:
            for action in block_actions(block, "bench", "bench-host"):
                if action is not None:
                    header = {action.op: {"_index": action.stream, "_id": action.id}}
                    body += (serializer.dumps(header), serializer.dumps(action.document))
        shipped += len(body) // 2
    ours = time.process_time() - started
    built = [
        action.document
        for page in _block_pages(journal, records)
        for block in page
        for action in block_actions(block, "bench", "bench-host")
        if action is not None
    ]
    references: dict[str, Callable[[Any], Any]] = {"json.dumps": json.dumps}
    try:
        import orjson
    except ImportError:
        pass
    else:
        references["orjson"] = orjson.dumps
    seconds = {}
    for name, dumps in references.items():
        started = time.process_time()
        for document in built:
            dumps(document)
        seconds[name] = time.process_time() - started
    return shipped, ours, seconds


def _block_pages(journal: Path, records: int) -> Iterator[list[StoredBlock]]:
    """Pages of 4 blocks from the journal's start until they hold `records` records."""
    count = 0
    with JournalReader(journal) as reader:
        position = Position()
        while count < records and (page := reader.blocks_after(position, 4)):
            yield [block for _, block in page]
            count += sum(block.count for _, block in page)
            position = page[-1][0]


def wall(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.stdout


def evict(root: Path) -> None:
    """Drop every file under `root` from the page cache: the next read comes from the disk."""
    for path in root.rglob("*"):
        if path.is_file():
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)


def matches(output: str) -> int:
    return sum(1 for line in output.splitlines() if line)


def report_grep(
    figures: Figures, questions: dict[str, str], found: dict[str, int], with_rg: bool
) -> None:
    for name in questions:
        ours = figures.best(f"grep {name}")
        line = f"grep {name} ({found[f'grep {name}']:,} lines): {figures.span(f'grep {name}')}"
        if with_rg:
            theirs, one = figures.best(f"rg {name}"), figures.best(f"rg {name} -j1")
            line += (
                f"; rg {figures.span(f'rg {name}')} ({found[f'rg {name}']:,} lines), "
                f"rg -j1 {figures.span(f'rg {name} -j1')}: {ours / theirs:.1f}× rg, "
                f"{ours / one:.1f}× rg -j1 (target ≤ 5×)"
            )
        else:
            line += "; rg is not installed: no reference"
        print(line)
        cold = figures.best(f"grep {name} cold")
        line = f"  cold cache: {figures.span(f'grep {name} cold')}"
        if with_rg:
            theirs = figures.best(f"rg {name} cold")
            line += (
                f"; rg {figures.span(f'rg {name} cold')}: {cold / theirs:.1f}× rg "
                "(target: faster than rg)"
            )
        print(line)


def report_scan(figures: Figures, lines: int) -> None:
    """scan against the plain loop on both trees, its share of rules, and its start-up."""
    scan, loop = figures.best("scan"), figures.best("reference loop")
    print(
        f"scan: {figures.span('scan')} CPU ({lines / scan:,.0f} lines per CPU-second); "
        f"reference loop {figures.span('reference loop')}: {scan / loop:.2f}× (target ≤ 1.25×)"
    )
    bare = figures.best("scan, no rules")
    print(
        f"  scan --no-rules: {figures.span('scan, no rules')} CPU: {bare / loop:.2f}× the loop "
        f"(the rules' share of scan: {1 - bare / scan:.0%})"
    )
    scan, loop = figures.best("scan, even"), figures.best("reference loop, even")
    print(
        f"scan of bench/make_tree.py's tree: {figures.span('scan, even')} CPU; reference loop "
        f"{figures.span('reference loop, even')}: {scan / loop:.2f}× (target ≤ 0.8×)"
    )
    print(f"scan of an empty folder (start-up), wall: {figures.span('start-up')} (target < 0.2 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-anchors"))
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ship-records", type=int, default=200_000)
    parser.add_argument(
        "--only", choices=("all", "grep", "scan"), default="all",
        help="grep: only the grep questions (warm and cold), for trees of 10M lines; scan: "
        "only scan, its --no-rules and the plain loop on both trees",
    )  # fmt: skip
    args = parser.parse_args()
    # An installed wheel has its bytecode compiled: measure the commands as users run them,
    # not recompiling every module at each start.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # What is measured in this process (shipping, events read back, the reference loop) runs
    # with the collector settings the agent and every command use.
    tune_garbage_collector()
    tree, journal, lines, size = build(args.work, args.lines)
    even = even_tree(args.work, args.lines) if args.only != "grep" else None
    empty = args.work / "empty"
    empty.mkdir(exist_ok=True)
    rg = shutil.which("rg")
    npuwatch = [sys.executable, "-m", "npuwatch"]
    questions = {"literal": LITERAL, "regex": REGEX}
    figures = Figures()
    found: dict[str, int] = {}
    for _ in range(args.rounds):
        if args.only != "grep":
            figures.add("reference loop", reference_scan(tree))
            _, cpu, _ = run_scan(tree, as_json=False)  # the report a user reads
            figures.add("scan", cpu)
            figures.add("scan, no rules", run_scan(tree, "--no-rules", as_json=False)[1])
            assert even is not None
            figures.add("reference loop, even", reference_scan(even))
            figures.add("scan, even", run_scan(even, as_json=False)[1])
            figures.add("start-up", wall([*npuwatch, "scan", str(empty)])[0])
        for name, pattern in questions.items() if args.only != "scan" else ():
            grep = [*npuwatch, "grep", pattern, "--journal", str(journal)]
            seconds, output = wall(grep)
            figures.add(f"grep {name}", seconds)
            found[f"grep {name}"] = matches(output)
            evict(journal)
            figures.add(f"grep {name} cold", wall(grep)[0])
            if rg is not None:
                for threads in ("", "-j1"):
                    command = [rg, *([threads] if threads else []), pattern, str(tree)]
                    seconds, output = wall(command)
                    figures.add(f"rg {name}{' ' + threads if threads else ''}", seconds)
                    found[f"rg {name}"] = matches(output)
                evict(tree)
                figures.add(f"rg {name} cold", wall([rg, pattern, str(tree)])[0])

    print(f"{lines:,} lines, {size / 1e6:.0f} MB; min–median of {args.rounds} rounds")
    if args.only != "scan":
        report_grep(figures, questions, found, rg is not None)
    if args.only == "grep":
        return
    if args.only == "scan":
        report_scan(figures, lines)
        return
    references: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        shipped, build_cpu, reference_cpu = ship_build(journal, args.ship_records)
        figures.add("ship", build_cpu)
        for name, seconds in reference_cpu.items():
            references.setdefault(name, []).append(seconds)
    for _ in range(args.rounds):
        events, read, loads = read_events(journal)
        figures.add("events read", read)
        figures.add("events loads", loads)
    journal_size = sum(p.stat().st_size for p in journal.glob("segment-*"))
    report_scan(figures, lines)
    print(
        f"journal: {journal_size / 1e6:.0f} MB for {size / 1e6:.0f} MB of logs: "
        f"{journal_size / size:.2f}× (target ≤ 0.35×)"
    )
    tables = sorted(table_bytes(journal).items(), key=lambda item: -item[1])
    print("  " + ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in tables if size > 1e5))
    ship = figures.best("ship")
    line = (
        f"shipping: {shipped:,} documents built, serialised and written as bulk lines in "
        f"{figures.span('ship')} CPU: {shipped / ship:,.0f} a CPU-second, "
        f"{ship / shipped * 1e6:.1f} µs each (target ≥ 100,000 a CPU-second)"
    )
    for name, timings in references.items():
        best = min(timings)
        line += f"; {name} of the built documents {best / shipped * 1e6:.1f} µs each"
    print(line)
    read, loads = figures.best("events read"), figures.best("events loads")
    print(
        f"events read back whole: {events:,} in {figures.span('events read')} CPU "
        f"({events / read:,.0f} a CPU-second); json.loads of them {figures.span('events loads')}"
    )


if __name__ == "__main__":
    main()
