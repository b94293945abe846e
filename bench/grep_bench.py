"""Benchmark `npuwatch grep` on a 1M-line journal against `rg` over the same raw log tree.

    python bench/grep_bench.py [--work /tmp/npuwatch-grep-bench] [--lines 1000000]

Builds (once) a log tree of about a million lines spread over 24 hours in the real CANN formats,
journals it with the real agent, then times the structured question of the issue, "ERROR records
with code E30009 on one device in the last hour", both ways. rg cannot filter by time or device,
so it is given only the level and the code: its answer is a superset, and its time a lower bound
for any rg pipeline that answers the question exactly. A text-only question (no field to use)
is timed too, where npuwatch has to read blocks.

Times are whole commands (interpreter start-up included), best and median of repeated runs, in
three states of the page cache:
  warm        everything cached (the logs were just written, the command just ran);
  data cold   the log tree and the journal evicted (posix_fadvise DONTNEED), programs cached:
              a training host an hour after the fact, where reading the dataset has pushed the
              logs out of memory while the agent (same interpreter, same modules) kept its code in;
  all cold    the whole page cache dropped (needs root), programs included.
The reference line is the interpreter starting and doing nothing: on a warm cache it is most of
what npuwatch's answer costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_tree import write_tree

DEVICE = 4
"""The device whose log folder the tree writer fills with E30009 errors (device-4)."""


def journal_records(journal: Path) -> int:
    total = 0
    for path in sorted(journal.glob("segment-*.db")):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            total += db.execute("SELECT coalesce(sum(count), 0) FROM blocks").fetchone()[0]
        finally:
            db.close()
    return total


def journal_read_bytes(journal: Path) -> int:
    """The bytes of the followed files that the journal's checkpoints say were read."""
    segments = sorted(journal.glob("segment-*.db")) if journal.exists() else []
    for path in reversed(segments):  # the newest segment holding checkpoints has them all
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT count(*), coalesce(sum(offset), 0) FROM checkpoints")
            files, read = row.fetchone()
        finally:
            db.close()
        if files:
            return int(read)
    return 0


def build(work: Path, lines: int) -> tuple[Path, Path]:
    tree, state = work / "tree", work / "state"
    marker = work / "built"
    if marker.exists():
        return tree, state / "journal"
    shutil.rmtree(work, ignore_errors=True)
    size = write_tree(tree, lines, hours=24)
    print(f"tree: {lines:,} lines, {size / 1e6:.0f} MB over 24 hours under {tree}")
    records, elapsed, journal_size = journal_with_agent(tree, state, work)
    print(
        f"journal: {records:,} records in {elapsed:.1f} s ({records / elapsed:,.0f} records/s),"
        f" {journal_size / 1e6:.0f} MB on disk ({size / journal_size:.1f} times smaller)"
    )
    marker.write_text("", encoding="utf-8")
    return tree, state / "journal"


def journal_with_agent(tree: Path, state: Path, work: Path) -> tuple[int, float, int]:
    """The real agent run over `tree` with its defaults until its journal stops growing; the
    records journaled, the seconds it took and the journal's bytes on disk."""
    env = {**os.environ, "NPUWATCH_CONFIG": str(work / "none.toml")}
    (work / "none.toml").write_text("", encoding="utf-8")
    command = [sys.executable, "-m", "npuwatch", "agent", "--root", str(tree),
               "--state-directory", str(state), "--log-level", "WARNING"]  # fmt: skip
    agent = subprocess.Popen(command, env=env)
    started = time.monotonic()
    tree_bytes = sum(path.stat().st_size for path in tree.rglob("*") if path.is_file())
    last, stable = -1, 0
    # Done when the journal says every byte was read and the count stops moving; or, should
    # the tree hold a file the agent does not follow, when the count has stood for 30 s (the
    # agent fills a block per file before the first commits: the count can stand for seconds).
    while stable < (3 if journal_read_bytes(state / "journal") >= tree_bytes else 30):
        time.sleep(1.0)
        if agent.poll() is not None:
            raise SystemExit(f"the agent stopped (exit status {agent.returncode}); see above")
        count = journal_records(state / "journal") if (state / "journal").exists() else 0
        stable = stable + 1 if count == last and count > 0 else 0
        last = count
    elapsed = time.monotonic() - started - stable
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=120)
    journal_size = sum(p.stat().st_size for p in (state / "journal").glob("segment-*"))
    return last, elapsed, journal_size


def can_drop_caches() -> bool:
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="utf-8")
    except OSError:
        return False
    return True


def evict(roots: list[Path]) -> None:
    """Drop the pages of every file under `roots` from the page cache (they are clean after a
    sync, so the kernel honours the advice)."""
    os.sync()
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                fd = os.open(Path(folder, name), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def timed(
    command: list[str], runs: int, prepare: Callable[[], object] | None = None
) -> tuple[float, float, str]:
    times = []
    output = ""
    for _ in range(runs):
        if prepare is not None:
            prepare()
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        output = result.stdout
    return min(times), statistics.median(times), output


def floor_script(journal: Path, since: str, until: str) -> str:
    """What any Python answer to the structured question costs at least: the interpreter, the
    sqlite3 module and the index query, nothing else."""
    start = int(datetime.fromisoformat(since).replace(tzinfo=timezone.utc).timestamp() * 1e6)
    end = int(datetime.fromisoformat(until).replace(tzinfo=timezone.utc).timestamp() * 1e6)
    return (
        "import sqlite3, glob\n"
        "total = 0\n"
        f"for path in sorted(glob.glob({str(journal / 'segment-*.db')!r})):\n"
        "    db = sqlite3.connect(f'file:{path}?mode=ro', uri=True)\n"
        '    total += db.execute("SELECT count(*) FROM notable n WHERE n.rowid IN (SELECT'
        " notable FROM notable_codes WHERE code = 'E30009') AND n.level = 'ERROR' AND"
        f' n.device = {DEVICE} AND n.timestamp_us BETWEEN {start} AND {end}").fetchone()[0]\n'
        "print(total)\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-grep-bench"))
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("rg not found: apt-get install ripgrep")
    tree, journal = build(args.work, args.lines)
    # The tree's files start 2025-05-08 09:56 and span 24 hours: "the last hour" is its 24th.
    end = datetime(2025, 5, 9, 9, 56)
    since, until = (end - timedelta(hours=1)).isoformat(" "), end.isoformat(" ")
    # The installed command, as users run it (python -m adds runpy's start-up).
    script = Path(sys.executable).with_name("npuwatch")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "npuwatch"]
    npuwatch = [*program, "grep", "--journal", str(journal), "--timezone", "UTC"]
    questions = [
        (
            "ERROR + E30009 + device + last hour",
            [
                *npuwatch,
                "--level",
                "ERROR",
                "--code",
                "E30009",
                "--device",
                str(DEVICE),
                "--since",
                since,
                "--until",
                until,
                "-c",
            ],
            [rg, "-c", "--no-filename", r"^\[ERROR\].*E30009", str(tree)],
        ),
        (
            "text only: 'connect to 10.0.4' (no field to use)",
            [*npuwatch, "-c", "connect to 10.0.4"],
            [rg, "-c", "--no-filename", "connect to 10.0.4", str(tree)],
        ),
    ]
    startup = timed([sys.executable, "-c", "pass"], args.runs)
    print(f"reference: {sys.executable} -c pass: best {startup[0] * 1000:.1f} ms")
    floor = timed([sys.executable, "-c", floor_script(journal, since, until)], args.runs)
    print(
        f"reference: the same question as one SQL query from a bare interpreter (sqlite3 only,"
        f" no arguments, no output formatting): best {floor[0] * 1000:.1f} ms,"
        f" {floor[2].strip()} records"
    )
    states: list[tuple[str, Callable[[], object] | None, int]] = [
        ("warm", None, args.runs),
        ("data cold", lambda: evict([tree, journal]), 5),
    ]
    if can_drop_caches():
        states.append(("all cold", lambda: os.sync() or can_drop_caches(), 3))
    for label, ours, theirs in questions:
        for cache, prepare, runs in states:
            mine = timed(ours, runs, prepare)
            other = timed(theirs, runs, prepare)
            found_rg = sum(int(n) for n in other[2].split()) if other[2].strip() else 0
            print(f"{label} [{cache}]:")
            for name, (best, median, _), found in (
                ("npuwatch grep", mine, f"{mine[2].strip()} records"),
                ("rg (superset)", other, f"{found_rg} lines"),
            ):
                print(
                    f"  {name}: best {best * 1000:7.1f} ms, median {median * 1000:7.1f} ms, {found}"
                )
    if len(states) < 3:
        print("all cold: not measured (no permission to write /proc/sys/vm/drop_caches)")


if __name__ == "__main__":
    main()
