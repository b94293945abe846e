"""`npuwatch scan` of a failed job's collection on one and on several processes, and the
two-stage flow (`summarize` on each host, `scan --summaries` once), in one run.

    python bench/collection_bench.py [--hosts 8,64] [--lines 20000] [--jobs 1,2]
                                     [--work /tmp/npuwatch-collection] [--rounds 2]

The collection is a failed training job written by bench/correlate_bench.py's generator (the
execution scenario: one device has an AI Core error, every other rank times out in the world
AllReduce, a Notify Wait block naming the failed rank), 8 NPUs a host, one plog a process with
`--lines` lines of training steps (HCCL, RUNTIME, GE lines) before the failure: the collection of
the issue's table (8 hosts: 1.3 M lines). Each tree is written once under --work and kept.

For each size it prints, each the best of --rounds (wall, CPU of the command and its workers,
peak RSS of the largest process), in a process of its own as an operator runs it:

  scan --jobs N   the text report (to /dev/null), for each N of --jobs; the speed-up of each N
                  beside --jobs 1, measured in the same run (target: >= 1.8x at 2 workers);
  reference       two one-host scans as two processes side by side against one after the
                  other: what this machine's two cores give any two processes (the ceiling);
  summarize       one host's stage: `npuwatch summarize HOST_TREE --host NAME -o FILE` of the
                  first host (target: <= 0.5 s for 8 processes x 20,000 lines; FaultDiag's
                  `ascend-fd parse` worker: 2.0-2.3 s), and the summary's size;
  scan --summaries  the central stage on every host's summary (target: <= 1 s at 256 hosts);
                  the summaries of the other hosts are written once (not timed) beside the
                  first's;
  central stage   alone, on --central-hosts hosts (default 256) of light processes
                  (--central-lines): a summary holds counts, first errors, events and
                  collective facts per process, not the healthy lines, so their summaries
                  are those of heavy processes;
  verdict         that every path named the planted device (host 3, NPU 3), and that the
                  central stage's JSON report is scan's (the root aside).

And the model for a host of 32 or 64 cores: scan's time on one worker divided by the cores,
plus the part that does not split (planning, merging: the central stage's time), from the
figures above. FaultDiag is not on a package index: where `ascend-fd` is on PATH it is run
beside (parse per host, one after another, then diag); else the commands are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import correlate_bench  # the generator of the failed job, beside this script

NPUS = 8
ROOT_HOST, ROOT_NPU = 3, 3


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    rss_mb: float


def npuwatch(*args: str, stdout: int | None = subprocess.DEVNULL) -> tuple[Run, bytes]:
    """`python -m npuwatch ARGS` in a process of its own: wall, CPU and peak RSS of it and
    its workers (wait4's usage of that one child: its largest process's peak)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "npuwatch", *args],
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=errors,
            env={**os.environ, "NO_COLOR": "1"},
        )
        output = process.stdout.read() if process.stdout is not None else b""
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            errors.seek(0)
            raise SystemExit(f"npuwatch {' '.join(args)} failed: {errors.read()[-2000:]!r}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024), output


def best(runs: list[Run]) -> Run:
    return min(runs, key=lambda run: run.wall_s)


def write_collection(work: Path, hosts: int, lines: int) -> tuple[Path, int, int]:
    """The job's tree (written once): its root, lines and bytes."""
    root = work / f"job-{hosts}x{NPUS}-{lines}"
    marker = root / ".written"
    correlate_bench.NPUS = NPUS
    correlate_bench.ROOT_HOST = ROOT_HOST
    job = correlate_bench.Job(hosts * NPUS, max(1, lines // 4))
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        tree = correlate_bench.write_job(job, root)
        marker.write_text(json.dumps({"lines": tree.lines, "bytes": tree.size}))
    written = json.loads(marker.read_text())
    return root, written["lines"], written["bytes"]


def machine_ceiling(root: Path, rounds: int) -> float:
    """How much faster two independent processes get the same work done side by side than one
    after the other: `scan` of two hosts' trees. Measured in the same run, it is the reference
    of the speed-up of --jobs 2 (a VM's two vCPUs may share a core, or its memory)."""
    first, second = sorted(p for p in root.iterdir() if p.is_dir())[:2]
    command = [sys.executable, "-m", "npuwatch", "scan", "--timezone", "UTC", "--jobs", "1"]
    apart, together = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for tree in (first, second):
            subprocess.run([*command, str(tree)], stdout=subprocess.DEVNULL, check=False)
        apart.append(time.perf_counter() - start)
        start = time.perf_counter()
        both = [
            subprocess.Popen([*command, str(t)], stdout=subprocess.DEVNULL) for t in (first, second)
        ]
        for process in both:
            process.wait()
        together.append(time.perf_counter() - start)
    return min(apart) / min(together)


def planted(report: dict[str, object]) -> bool:
    incidents = report.get("incidents") or []
    if not incidents:
        return False
    causes = incidents[0].get("root_cause") or []  # type: ignore[union-attr]
    want_host = correlate_bench.host_name(ROOT_HOST)
    return any(c.get("host") == want_host and c.get("device") == ROOT_NPU for c in causes)


def line(name: str, run: Run, extra: str = "") -> None:
    print(
        f"  {name:<22} wall {run.wall_s:7.2f} s  CPU {run.cpu_s:7.2f} s  "
        f"peak RSS {run.rss_mb:6.0f} MB  {extra}"
    )


def measure(work: Path, hosts: int, lines: int, jobs: list[int], rounds: int) -> None:
    root, total_lines, total_bytes = write_collection(work, hosts, lines)
    print(
        f"\n{hosts} hosts x {NPUS} NPUs, {lines:,} lines a process: "
        f"{total_lines / 1e6:.1f} M lines, {total_bytes / 1e6:.0f} MB ({root})"
    )
    common = ("--timezone", "UTC")
    scans: dict[int, Run] = {}
    for _ in range(rounds):  # interleaved: each N sees the same machine
        for n in jobs:
            run, _ = npuwatch("scan", str(root), *common, "--jobs", str(n))
            if n not in scans or run.wall_s < scans[n].wall_s:
                scans[n] = run
    ceiling = machine_ceiling(root, rounds)
    reference = scans[jobs[0]]
    for n in jobs:
        speed_up = reference.wall_s / scans[n].wall_s
        rate = total_lines / scans[n].wall_s / 1e6
        line(
            f"scan --jobs {n}", scans[n], f"{rate:.2f} M lines/s, {speed_up:.2f}x --jobs {jobs[0]}"
        )

    print(
        f"  reference: this machine runs two scans of one host each, as two processes side by "
        f"side, {ceiling:.2f}x as fast as one after the other (the most two workers can give)"
    )
    summaries = work / f"summaries-{hosts}x{NPUS}-{lines}"
    shutil.rmtree(summaries, ignore_errors=True)
    summaries.mkdir()
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    first = names[0]
    stage = best(
        [
            npuwatch(
                "summarize",
                str(root / first),
                "--host",
                first,
                *common,
                "-o",
                str(summaries / f"{first}.json"),
            )[0]
            for _ in range(rounds)
        ]
    )
    size = (summaries / f"{first}.json").stat().st_size
    host_lines = total_lines // hosts
    line("summarize (one host)", stage, f"{host_lines:,} lines; summary {size / 1e3:.0f} kB")
    for name in names[1:]:
        npuwatch(
            "summarize",
            str(root / name),
            "--host",
            name,
            *common,
            "-o",
            str(summaries / f"{name}.json"),
        )
    central = best(
        [npuwatch("scan", "--summaries", str(summaries), *common)[0] for _ in range(rounds)]
    )
    line("scan --summaries", central, f"{hosts} summaries")

    whole = json.loads(npuwatch("scan", str(root), *common, "--json", stdout=None)[1])
    merged = json.loads(
        npuwatch("scan", "--summaries", str(summaries), *common, "--json", stdout=None)[1]
    )
    merged["root"] = whole["root"]
    print(
        f"  verdict: scan {'right' if planted(whole) else 'WRONG'}, two stages "
        f"{'the same report' if merged == whole else 'A DIFFERENT REPORT'}"
    )
    one = scans.get(1, reference)
    for cores in (32, 64):
        modelled = one.wall_s / min(cores, hosts) + central.wall_s
        print(
            f"  model, {cores} cores: scan --jobs {cores} ~ {modelled:.1f} s "
            f"(one worker's {one.wall_s:.1f} s over min(cores, hosts), + the merge ~ the "
            "central stage)"
        )
    if shutil.which("ascend-fd"):
        faultdiag(root, work / f"faultdiag-{hosts}")
    else:
        print(
            "  FaultDiag (not installed here): for each host "
            f"`ascend-fd parse -i {root}/HOST -o OUT/HOST`, then `ascend-fd diag -i OUT -o DIAG`"
        )


def central_stage(work: Path, hosts: int, lines: int, rounds: int) -> None:
    """The central stage alone on many hosts: their summaries do not grow with the healthy
    lines (counts, first errors, events and collective facts are per process), so a collection
    of light processes gives the summaries of a heavy one at a fraction of the writing."""
    root, total_lines, _ = write_collection(work, hosts, lines)
    summaries = work / f"summaries-{hosts}x{NPUS}-{lines}"
    names = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not (summaries / f"{names[-1]}.json").exists():
        summaries.mkdir(exist_ok=True)
        for name in names:
            npuwatch(
                "summarize",
                str(root / name),
                "--host",
                name,
                "--timezone",
                "UTC",
                "-o",
                str(summaries / f"{name}.json"),
            )
    size = sum(p.stat().st_size for p in summaries.iterdir())
    central = best(
        [
            npuwatch("scan", "--summaries", str(summaries), "--timezone", "UTC")[0]
            for _ in range(rounds)
        ]
    )
    print(
        f"\ncentral stage at {hosts} hosts x {NPUS} NPUs ({total_lines / 1e6:.1f} M lines of "
        f"{lines:,} a process; summaries {size / 1e6:.0f} MB, {size / hosts / 1e3:.0f} kB a host)"
    )
    line("scan --summaries", central, "target <= 1 s")


def faultdiag(root: Path, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    for host in sorted(p for p in root.iterdir() if p.is_dir()):
        (out / "parsed" / host.name).mkdir(parents=True)
        subprocess.run(
            ["ascend-fd", "parse", "-i", str(host), "-o", str(out / "parsed" / host.name)],
            check=False,
            capture_output=True,
        )
    parsed = time.perf_counter() - start
    (out / "diag").mkdir()
    start = time.perf_counter()
    subprocess.run(
        ["ascend-fd", "diag", "-i", str(out / "parsed"), "-o", str(out / "diag")],
        check=False,
        capture_output=True,
    )
    print(
        f"  FaultDiag: parse {parsed:.2f} s (hosts one after another), "
        f"diag {time.perf_counter() - start:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="8,64", help="collection sizes, in hosts")
    parser.add_argument("--lines", type=int, default=20_000, help="lines a process")
    parser.add_argument("--jobs", default="1,2", help="worker counts of scan")
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-collection"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--central-hosts", type=int, default=256, help="hosts of the central stage alone (0: no)"
    )
    parser.add_argument(
        "--central-lines", type=int, default=500, help="lines a process of that collection"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    jobs = [int(n) for n in args.jobs.split(",")]
    print(f"npuwatch collection benchmark; {os.cpu_count()} cores; best of {args.rounds}")
    for hosts in (int(n) for n in args.hosts.split(",")):
        measure(args.work, hosts, args.lines, jobs, args.rounds)
    if args.central_hosts:
        central_stage(args.work, args.central_hosts, args.central_lines, args.rounds)


if __name__ == "__main__":
    main()
