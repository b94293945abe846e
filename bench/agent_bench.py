"""Benchmark the agent as it runs: a writer process appends real-format plog lines at a set rate,
the real `npuwatch agent` follows them into its journal, and this script watches both.

Three workloads, one per target of the agent:

    python bench/agent_bench.py flood --mb-per-s 25 --seconds 30   # DEBUG flood: keeps up?
    python bench/agent_bench.py quiet --lines-per-s 100 --seconds 60  # CPU when logs are quiet
    python bench/agent_bench.py many --files 10000 --folders 1000     # RSS with 10,000 files

Figures: lines/s from write to journal, the lag (how long after the writer stopped the journal
held everything), the agent's CPU (% of one core, from /proc) and peak RSS. The reference,
measured in the same run on the same lines, is npuwatch's parser alone in this process: what
one core does before rules and journal.

With `--fluent-bit PATH` (or $FLUENT_BIT), the flood is written a second time, the same lines at
the same rate, for Fluent Bit to follow: its tail input with a regular-expression parser of the
CANN header (level, module, pid, process name, time, body) into its null output, what a log
shipper does before shipping. Its CPU per line is measured the same way, until its tail database
holds every file's full size (what it has read and handed on).
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_tree import _SINGLE_LINE_TEMPLATES, _header
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.records import Flag

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_DEBUG_TEMPLATES = [t for t in _SINGLE_LINE_TEMPLATES if "DEBUG" in t[1]]


def debug_lines(count: int, pid: int, start: int = 0) -> list[str]:
    """`count` DEBUG/INFO plog lines of the real body styles, numbered from `start`."""
    from datetime import datetime, timedelta

    moment = datetime(2025, 5, 8, 9, 56, 0) + timedelta(microseconds=start * 50)
    lines = []
    for number in range(start, start + count):
        _, _, module, template = _DEBUG_TEMPLATES[number % len(_DEBUG_TEMPLATES)]
        level = "INFO" if number % 10 == 0 else "DEBUG"
        body = template.format(line=number % 3000, tid=pid + 1, pid=pid, n=number % 4096,
                               m=number, dev=pid % 8)  # fmt: skip
        lines.append(_header(level, module, pid, "python3", moment) + body)
        moment += timedelta(microseconds=50)
    return lines


@dataclass
class ProcessSample:
    cpu_s: float
    rss_kb: int
    peak_rss_kb: int


def sample(pid: int) -> ProcessSample:
    with open(f"/proc/{pid}/stat") as handle:  # noqa: PTH123
        fields = handle.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    rss = peak = 0
    with open(f"/proc/{pid}/status") as handle:  # noqa: PTH123
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1])
    return ProcessSample(cpu, rss, peak)


def journaled_records(journal: Path) -> int:
    """Records in the journal, from the block summaries (no block is opened)."""
    total = 0
    for path in sorted(journal.glob("segment-*.db")):
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                total += db.execute("SELECT coalesce(sum(count), 0) FROM blocks").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            pass
    return total


def start_agent(root: Path, state: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["NPUWATCH_CONFIG"] = str(state / "none.toml")
    state.mkdir(parents=True, exist_ok=True)
    (state / "none.toml").write_text("", encoding="utf-8")
    env["NPUWATCH_SOURCES__IDLE_FLUSH"] = "1s"
    env["NPUWATCH_SINKS__PROMETHEUS__LISTEN"] = "127.0.0.1:0"
    command = [sys.executable, "-m", "npuwatch", "agent", "--root", str(root),
               "--state-directory", str(state), "--log-level", "WARNING"]  # fmt: skip
    return subprocess.Popen(command, env=env)


def stop_agent(agent: subprocess.Popen[bytes]) -> None:
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=120)


def writer_script(root: Path, files: int, rate_lines: float, seconds: float, chunk: int) -> str:
    """The writer process: appends blocks of `chunk` prepared lines round-robin to `files`
    files at `rate_lines`; the lines are joined beforehand so that the writer costs little."""
    return f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from agent_bench import debug_lines
from pathlib import Path
folder = Path({str(root)!r}) / "debug" / "plog"
folder.mkdir(parents=True, exist_ok=True)
paths = [folder / f"plog-{{200000 + i}}_20250508095600{{i:03d}}.log" for i in range({files})]
handles = [p.open("ab", buffering=0) for p in paths]
blocks = []
for i in range({files}):
    lines = debug_lines(20 * {chunk}, 200000 + i)
    blocks.append([("\\n".join(lines[k:k + {chunk}]) + "\\n").encode()
                   for k in range(0, len(lines), {chunk})])
start = time.monotonic(); written = 0; index = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= {seconds}:
        break
    due = int(elapsed * {rate_lines})
    if written >= due:
        time.sleep(min(0.005, (written + {chunk} - due) / {rate_lines}))
        continue
    f = index % {files}
    handles[f].write(blocks[f][(index // {files}) % 20])
    index += 1
    written += {chunk}
for h in handles: h.close()
print(written, time.monotonic() - start)
"""


def start_writer(
    root: Path, args: argparse.Namespace, rate_lines: float, chunk: int
) -> subprocess.Popen[str]:
    """The writer process of the workload; it prints the lines written and its seconds."""
    return subprocess.Popen(
        [sys.executable, "-c", writer_script(root, args.files, rate_lines, args.seconds, chunk)],
        stdout=subprocess.PIPE,
        text=True,
    )


def reference_parse_rate(lines: list[str]) -> float:
    """Lines/s of the parser alone on these lines, in this process."""
    data = ("\n".join(lines) + "\n").encode()
    parser = StreamParser(LocalClock(resolve_timezone("UTC")), path="/x/debug/plog/plog-1_1.log")
    started = time.perf_counter()
    parser.feed(data)
    parser.flush()
    return len(lines) / (time.perf_counter() - started)


def wait_until_settled(pid: int, timeout_s: float = 30.0) -> None:
    """Until the process has used under 10 ms of CPU in half a second (its start-up is over)."""
    deadline = time.monotonic() + timeout_s
    last = sample(pid).cpu_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sample(pid).cpu_s
        if now - last < 0.01:
            return
        last = now


def run_writer_workload(args: argparse.Namespace, rate_lines: float, chunk: int) -> None:
    tune_garbage_collector()
    work = Path(tempfile.mkdtemp(prefix="npuwatch-bench-"))
    root, state = work / "logs", work / "state"
    root.mkdir()
    sample_lines = debug_lines(20000, 1)
    line_bytes = sum(len(line) + 1 for line in sample_lines) / len(sample_lines)
    agent = start_agent(root, state)
    wait_until_settled(agent.pid)  # start-up (imports, rules, first rescan) is not the workload
    before = sample(agent.pid)
    writer = start_writer(root, args, rate_lines, chunk)
    started = time.monotonic()
    peak = 0
    while writer.poll() is None:
        time.sleep(0.5)
        peak = max(peak, sample(agent.pid).peak_rss_kb)
    written = int(writer.stdout.read().split()[0]) if writer.stdout else 0
    writer_done = time.monotonic()
    records = 0
    while time.monotonic() - writer_done < 300:
        records = journaled_records(state / "journal")
        if records >= written - args.files:  # the last record of each file waits for idle
            break
        time.sleep(0.2)
    caught_up = time.monotonic()
    after = sample(agent.pid)
    stop_agent(agent)
    final, cut = journal_after_stop(state / "journal")
    cpu = after.cpu_s - before.cpu_s
    span = caught_up - started
    mb = written * line_bytes / 1e6
    print(f"workload: {args.workload}, {args.files} files, {written:,} lines of ~{line_bytes:.0f}"
          f" bytes ({mb:.0f} MB) written in {writer_done - started:.1f} s"
          f" ({written / (writer_done - started):,.0f} lines/s, {mb / (writer_done - started):.1f}"
          " MB/s)")  # fmt: skip
    print(f"agent: journaled {records:,} records; caught up {caught_up - writer_done:.2f} s after"
          f" the writer stopped; {records / span:,.0f} lines/s ({mb / span:.1f} MB/s) write to"
          f" journal")  # fmt: skip
    peak_mb = max(peak, after.peak_rss_kb) / 1024
    print(f"agent CPU: {cpu:.2f} s over {span:.1f} s = {100 * cpu / span:.1f}% of one core;"
          f" {cpu / max(records, 1) * 1e6:.1f} us/line; peak RSS {peak_mb:.0f} MB")  # fmt: skip
    print(
        f"after the stop: {final:,} records for {written:,} lines written, {cut} lines cut"
        " by an idle flush (both must be exact: the stop hands on each file's last record)"
    )
    reference = reference_parse_rate(sample_lines)
    print(f"reference: parser alone {reference:,.0f} lines/s ({reference * line_bytes / 1e6:.1f}"
          " MB/s) on one core in this process")  # fmt: skip
    print(f"agent: {records / max(cpu, 1e-9):,.0f} lines per CPU-second")
    binary = getattr(args, "fluent_bit", None)
    if binary:
        run_fluent_bit(args, binary, rate_lines, chunk)


FLUENT_BIT_PARSER = (
    r"^\[(?<level>\w+)\] (?<module>\w+)\((?<pid>-?\d+),(?<name>[^)]*)\):(?<time>\S+) (?<body>.*)$"
)
"""The CANN header as a Fluent Bit (Onigmo) regular expression: the fields npuwatch's parser
reads from it (its body styles and codes are more, not counted here)."""


def fluent_bit_config(root: Path, work: Path) -> Path:
    """A Fluent Bit configuration: tail the plog files under `root` from their start, parse each
    line's header, drop the records (null output)."""
    parsers = work / "parsers.conf"
    parsers.write_text(
        f"[PARSER]\n    Name cann\n    Format regex\n    Regex {FLUENT_BIT_PARSER}\n",
        encoding="utf-8",
    )
    config = work / "fluent-bit.conf"
    config.write_text(
        f"""[SERVICE]
    Flush 1
    Log_Level warn
    Parsers_File {parsers}
[INPUT]
    Name tail
    Path {root}/debug/plog/*.log
    Parser cann
    Read_from_Head On
    Refresh_Interval 1
    Buffer_Chunk_Size 1MB
    Buffer_Max_Size 4MB
    DB {work}/tail.db
[OUTPUT]
    Name null
    Match *
""",
        encoding="utf-8",
    )
    return config


def fluent_bit_offsets(database: Path) -> int:
    """The bytes Fluent Bit's tail has read and handed on, over every file (its database)."""
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            query = "SELECT coalesce(sum(offset), 0) FROM in_tail_files"
            return int(db.execute(query).fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def run_fluent_bit(args: argparse.Namespace, binary: str, rate_lines: float, chunk: int) -> None:
    """The same flood followed by Fluent Bit: its CPU per line, in the same run."""
    work = Path(tempfile.mkdtemp(prefix="npuwatch-bench-fluent-bit-"))
    root = work / "logs"
    (root / "debug" / "plog").mkdir(parents=True)
    config = fluent_bit_config(root, work)
    shipper = subprocess.Popen([binary, "-q", "-c", str(config)], stdout=subprocess.DEVNULL)
    wait_until_settled(shipper.pid)
    before = sample(shipper.pid)
    writer = start_writer(root, args, rate_lines, chunk)
    started = time.monotonic()
    written = int(writer.communicate()[0].split()[0])
    writer_done = time.monotonic()
    size = sum(path.stat().st_size for path in (root / "debug" / "plog").iterdir())
    read = 0
    while time.monotonic() - writer_done < 300 and read < size:
        time.sleep(0.2)
        read = fluent_bit_offsets(work / "tail.db")
    caught_up = time.monotonic()
    after = sample(shipper.pid)
    shipper.send_signal(signal.SIGTERM)
    shipper.wait(timeout=60)
    cpu = after.cpu_s - before.cpu_s
    span = caught_up - started
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    name = (version.stdout.strip().splitlines() or [binary])[0]
    print(f"Fluent Bit ({name}), tail + regex parser"
          f" -> null, the same {written:,} lines at the same rate: read {read:,} of {size:,} bytes;"
          f" caught up {caught_up - writer_done:.2f} s after the writer stopped")  # fmt: skip
    print(f"Fluent Bit CPU: {cpu:.2f} s over {span:.1f} s = {100 * cpu / span:.1f}% of one core;"
          f" {cpu / max(written, 1) * 1e6:.1f} us/line = {written / max(cpu, 1e-9):,.0f} lines per"
          f" CPU-second; peak RSS {after.peak_rss_kb / 1024:.0f} MB")  # fmt: skip


def journal_after_stop(journal: Path) -> tuple[int, int]:
    """(records, records flagged incomplete) in the journal: every block decoded."""
    records = incomplete = 0
    with JournalReader(journal) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            for _, block in page:
                for record in decode_block(block.payload):
                    records += 1
                    incomplete += bool(record.flags & Flag.INCOMPLETE)
            position = page[-1][0]
    return records, incomplete


def run_many(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="npuwatch-bench-"))
    root, state = work / "logs", work / "state"
    per_folder = max(args.files // args.folders, 1)
    lines = 0
    for folder_index in range(args.folders):
        pid = 300000 + folder_index
        folder = root / "debug" / f"device-app-{pid}"
        folder.mkdir(parents=True)
        for file_index in range(per_folder):
            text = "\n".join(debug_lines(args.lines_per_file, pid, file_index * 1000)) + "\n"
            (folder / f"device-app-{pid}_20250508095600{file_index:03d}.log").write_text(text)
            lines += args.lines_per_file
    print(f"workload: many, {args.folders * per_folder:,} files in {args.folders:,} folders,"
          f" {lines:,} lines")  # fmt: skip
    agent = start_agent(root, state)
    started = time.monotonic()
    while journaled_records(state / "journal") < lines - args.folders * per_folder:
        time.sleep(0.5)
        if time.monotonic() - started > 600:
            break
    caught_up = time.monotonic() - started
    first = sample(agent.pid)
    time.sleep(args.seconds)
    second = sample(agent.pid)
    open_fds = sum(1 for _ in Path(f"/proc/{agent.pid}/fd").iterdir())
    stop_agent(agent)
    print(f"agent: read every file in {caught_up:.1f} s; then idle for {args.seconds:.0f} s:"
          f" CPU {100 * (second.cpu_s - first.cpu_s) / args.seconds:.2f}% of one core;"
          f" RSS {second.rss_kb / 1024:.0f} MB (peak {second.peak_rss_kb / 1024:.0f} MB);"
          f" {open_fds} open descriptors")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="workload", required=True)
    flood = commands.add_parser("flood")
    flood.add_argument("--mb-per-s", type=float, default=25.0)
    flood.add_argument("--seconds", type=float, default=30.0)
    flood.add_argument("--files", type=int, default=8)
    flood.add_argument(
        "--fluent-bit", default=os.environ.get("FLUENT_BIT"), metavar="PATH",
        help="a fluent-bit binary: the same flood followed by its tail + regex parser -> null",
    )  # fmt: skip
    quiet = commands.add_parser("quiet")
    quiet.add_argument("--lines-per-s", type=float, default=100.0)
    quiet.add_argument("--seconds", type=float, default=60.0)
    quiet.add_argument("--files", type=int, default=16)
    many = commands.add_parser("many")
    many.add_argument("--files", type=int, default=10_000)
    many.add_argument("--folders", type=int, default=1_000)
    many.add_argument("--lines-per-file", type=int, default=20)
    many.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    if args.workload == "flood":
        line_bytes = 160.0
        run_writer_workload(args, args.mb_per_s * 1e6 / line_bytes, chunk=400)
    elif args.workload == "quiet":
        run_writer_workload(args, args.lines_per_s, chunk=1)
    else:
        run_many(args)


if __name__ == "__main__":
    main()
