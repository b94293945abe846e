"""The cross-device root-cause engine on a failed job of 1,000 to 16,000 processes.

Generates the CANN plogs of one failed training job: H hosts × 16 NPUs, one process and one
plog per NPU, in host folders. Every process joins a world communicator (HCCL_ENV, root-info
init, SetupAgent and hcclCommInitInfo lines), a TP sub-communicator of the 8 NPUs of its half
host and a DP sub-communicator of the same NPU on every host. One device (host 7, NPU 3) fails
with an AI Core error; every other rank times out HCCL_EXEC_TIMEOUT (1836 s) later in the world
AllReduce, with a Notify Wait task-exception block naming the failed rank (formats/hccl.md
H3.1). Around them, healthy INFO traffic (HCCL Entry-HcclAllReduceInner, RUNTIME, GE lines): a
base amount and ten times more. Each tree is written once, then measured in a fresh process
that reads the files one by one, as `scan` does (reading is not timed). For each size and
traffic level it prints

  (1) parsing alone (StreamParser over every file): the reference, measured in the same run;
  (2) parsing + CollectiveExtractor.feed: the extractor's cost per line, timed around its calls
      and as the difference of the two runs, as a share of parsing alone (target: ≤ 15 %);
      and its two parts: picking the records that can matter (selection.host_positions, timed
      alone on the same batches) and reading those it picks (the rest);
  (3) time to verdict once every fact and event is in: Correlator.add_all (summed over the
      batches, as a scan adds them), then incidents() (target: ≤ 2 s at 16,000 processes);
  (4) peak RSS of that process (VmHWM; ru_maxrss beside it), above the interpreter and per
      process of the job (target: ≤ 500 MB at 16,000 processes; it should grow linearly), and
      the tracemalloc size of the correlator's state from an extra traced round, with its
      peak during incidents(), where that is cheap;
  (5) the verdict: FaultDiag 113 with the failed device as root cause (exit 1 if not).

CPU times are the fastest of 3 rounds for up to 4,000 processes, one round above. The engine's
code is digested at the start and in each measuring process: others may be editing it.

    python bench/correlate_bench.py [--processes 1000,4000,16000] [--quick]
    python -m cProfile -s cumtime bench/correlate_bench.py --verdict-step 4000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import npuwatch
from npuwatch.analysis.correlation import Correlator, Incident
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import LocalClock, StreamParser, first_pass
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.selection import host_positions

NPUS = 16
TP_SIZE = 8
ROOT_HOST, ROOT_NPU = 7, 3
BASE_STEPS = 12
"""Training steps of healthy traffic per process in the base variant (4 lines a step)."""
LOUD_FACTOR = 10
EXEC_TIMEOUT_S = 1836
DATE = "2025-11-03"
START_US = 9 * 3600 * 1_000_000  # 09:00:00 on DATE
INIT_END_US = START_US + 4_000_000
FAILURE_US = START_US + 900_000_000
EPOCH_OF_START_US = 1_762_160_400_000_000
PNAME = "python3"
QUICK_SIZES = (256, 1024)
TARGET_SHARE = 0.15
TARGET_VERDICT_S = 2.0
TARGET_RSS_MB = 500
ENGINE_FOLDERS = ("parsers", "analysis/correlation")
TRACE_LINES = 2_500_000
"""The state is traced (an extra round at about twice the CPU) only for trees up to this size."""
TRACE_VERDICT_S = 20.0
"""incidents() is run again under tracemalloc only if it takes less than this."""


# -- the job's logs --------------------------------------------------------------------------


def _clock(us: int) -> str:
    """`HH:MM:SS.mmm.uuu` of a time of day in µs (the job stays inside one day)."""
    seconds, micros = divmod(us, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{micros // 1000:03d}.{micros % 1000:03d}"


def host_name(host: int) -> str:
    return f"node-{host:04d}"


def host_ip(host: int) -> str:
    return f"10.{10 + host // 250}.{host % 250}.1"


def device_ip(host: int, npu: int) -> str:
    return f"29.{host // 250}.{host % 250}.{npu + 1}"


def pid_of(host: int, npu: int) -> int:
    return 1_000_000 + (host * 7919) % 500_000 + npu * 131


@dataclass(frozen=True)
class Job:
    processes: int
    steps: int

    @property
    def hosts(self) -> int:
        return -(-self.processes // NPUS)

    def npus_on(self, host: int) -> int:
        return min(NPUS, self.processes - host * NPUS)

    @property
    def root(self) -> tuple[int, int]:
        return min(ROOT_HOST, self.hosts - 1), ROOT_NPU

    @property
    def root_rank(self) -> int:
        host, npu = self.root
        return host * NPUS + npu

    @property
    def world(self) -> str:
        return f"{host_ip(0)}%eth0_60000_0_{EPOCH_OF_START_US + 412_345}"

    def dp_size(self, npu: int) -> int:
        return self.processes // NPUS + (npu < self.processes % NPUS)


def plog(job: Job, host: int, npu: int) -> tuple[str, str]:
    """The plog file name and text of one process."""
    name, before, failure = plog_parts(job, host, npu)
    return name, "\n".join(before + failure) + "\n"


def plog_parts(job: Job, host: int, npu: int) -> tuple[str, list[str], list[str]]:
    """The plog file name of one process, its lines before the failure (identity lines and
    healthy steps) and from it on (the AI Core error, or the timeout waiting for it)."""
    pid = pid_of(host, npu)
    rank = host * NPUS + npu
    size = job.processes
    world = job.world
    tp = f"group_name_tp{host * 2 + npu // TP_SIZE}"
    dp = f"group_name_dp{npu}"
    ip = host_ip(host)
    lines: list[str] = []
    add = lines.append
    now = START_US + host * 3_000 + npu * 200

    def hccl(level: str, us: int, where: str, tid: int, message: str) -> None:
        add(f"[{level}] HCCL({pid},{PNAME}):{DATE}-{_clock(us)} [{where}] [{tid}]{message}")

    add(
        f"[INFO] ASCENDCL({pid},{PNAME}):{DATE}-{_clock(now)} [acl.cpp:218]{pid} aclInit: "
        "start to execute aclInit"
    )
    hccl(
        "INFO",
        now + 310,
        "externalinput.cc:598",
        pid,
        "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [120]s",
    )
    hccl(
        "INFO",
        now + 316,
        "externalinput.cc:558",
        pid,
        f"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [{EXEC_TIMEOUT_S}]s",
    )
    if rank == 0:
        hccl(
            "INFO",
            now + 900,
            "op_base.cc:402",
            pid,
            "Entry-HcclGetRootInfo:rootInfo[0x7fffcd65f130], deviceLogicId[0]",
        )
    hccl(
        "INFO",
        now + 1_200_000,
        "op_base.cc:1832",
        pid,
        f"Entry-HcclCommInitRootInfoInner:ranks[{size}], rank[{rank}], rootinfo: host "
        f"ip[{host_ip(0)}] port[60000] nicDeploy[1] identifier[{world}], deviceLogicId[{npu}]",
    )
    hccl(
        "INFO",
        now + 1_200_400,
        "topoinfo_exchange_agent.cc:98",
        pid,
        f"[HCCL_TRACE][Flat]SetupAgent rankNum[{size}], rank[{rank}], rootInfo "
        f"identifier[{world}], server[{ip}%eth0], serverPort[60000]deviceType[4], "
        f"logicDevId[{npu}], phydevId[{npu}], deviceIp[{device_ip(host, npu)}]",
    )
    settled = INIT_END_US + rank  # the end of init is a rendezvous of all members
    for name, own, count, at in (
        (world, rank, size, settled),
        (tp, npu % TP_SIZE, TP_SIZE, settled + 200_000),
        (dp, host, job.dp_size(npu), settled + 400_000),
    ):
        hccl(
            "INFO",
            at,
            "hccl_comm.cc:159",
            pid,
            f"hcclCommInitInfo:commId[{name}], rank[{own}], totalRanks[{count}], "
            f"serverId[{ip}], deviceType[4],logicDevId[{npu}], identifier[{name}]",
        )

    # one time-of-day prefix a step: its 4 lines fall in the same millisecond
    gap = (FAILURE_US - INIT_END_US - 2_000_000) // max(1, job.steps) // 1000 * 1000
    now = INIT_END_US + 1_000_000
    ge = f"[INFO] GE({pid},{PNAME}):{DATE}-"
    runtime = f"[INFO] RUNTIME({pid},{PNAME}):{DATE}-"
    entry = f"[INFO] HCCL({pid},{PNAME}):{DATE}-"
    where = f" [op_base.cc:2130] [{pid + 3}]Entry-HcclAllReduceInner: tag[AllReduce_"
    tp_rank, tail = npu % TP_SIZE, f"deviceLogicId[{npu}], capture status[0], model id[0]."
    for step in range(job.steps):
        now += gap
        stamp = _clock(now)[:-3]
        count = 4096 * (step % 64 + 1)
        buffer = f"{step % 4096:04x}"
        add(
            f"{ge}{stamp}000 [graph_manager.cc:1320]{pid} PreRun:[GEPERFTRACE] The time cost "
            f"of GraphManager::stages is [{(step * 7919) % 100_000}] micro second."
        )
        add(
            f"{entry}{stamp}180{where}{tp}], sendBuf[0x12e7bf55{buffer}], recvBuf[0x12e7bf56"
            f"{buffer}], count[{count}], dataType[float16], op[sum], localRank[{tp_rank}], "
            f"streamId[5], comm[0x331c9c00], {tail}"
        )
        add(
            f"{runtime}{stamp}420 [stream.cc:1421] {pid + 1} StreamSynchronize: stream_id=2, "
            f"task_id={100 + step % 60000}, device_id={npu}, flip_num=0, timeout=-1ms"
        )
        add(
            f"{entry}{stamp}650{where}{dp}], sendBuf[0x12e7c055{buffer}], recvBuf[0x12e7c056"
            f"{buffer}], count[{count * 2}], dataType[float32], op[sum], localRank[{host}], "
            f"streamId[6], comm[0x331c9e00], {tail}"
        )

    failure: list[str] = []
    if (host, npu) == job.root:
        _aicore_error(failure.append, pid, npu, FAILURE_US)
    else:
        _notify_timeout(
            failure.append, job, pid, rank, npu, FAILURE_US + EXEC_TIMEOUT_S * 1_000_000
        )
    name = f"plog-{pid}_20251103090000{npu:03d}.log"
    return name, lines, failure


def _aicore_error(add: Callable[[str], None], pid: int, npu: int, at: int) -> None:
    tid = pid + 40
    head = f"({pid},{PNAME}):{DATE}-"
    add(
        f"[ERROR] RUNTIME{head}{_clock(at)} [stars_engine.cc:1553]{tid} ProcLogicCqReport:"
        f"Task run failed, device_id={npu}, stream_id=2, task_id=61, sqe_type=0(ffts), "
        "errType=0x1(task exception), sqSwStatus=0"
    )
    add(
        f"[ERROR] RUNTIME{head}{_clock(at + 15)} [device_error_proc.cc:1409]{tid} "
        "ProcessStarsCoreErrorInfo:[INIT][DEFAULT]report error module_type=5, "
        "module_name=EZ9999"
    )
    add(
        f"[ERROR] RUNTIME{head}{_clock(at + 31)} [device_error_proc.cc:1409]{tid} "
        f"ProcessStarsCoreErrorInfo:[INIT][DEFAULT]The error from device(chipId:{npu}, "
        "dieId:0), serial number is 3, there is an aicore error exception, core id is 7, "
        "error code = 0x800000, dump info: pc start: 0x124800010000, current: 0x124800010a4c"
    )
    add(
        f"[ERROR] RUNTIME{head}{_clock(at + 48)} [davinci_kernel_task.cc:1030]{tid} "
        "PreCheckTaskErr:An error occurred in the kernel task, retCode=0x26, "
        "[aicore exception]."
    )
    add(
        f"[ERROR] ASCENDCL{head}{_clock(at + 260)} [stream.cpp:120]{pid} "
        "aclrtSynchronizeStream:[EXEC][DEFAULT]synchronize stream failed, runtime result = "
        "507015"
    )


def _notify_timeout(
    add: Callable[[str], None], job: Job, pid: int, rank: int, npu: int, at: int
) -> None:
    """HOST_TS task exception of a Notify Wait (formats/hccl.md H3.1, steps 1-7)."""
    at += (rank * 7) % 1_500_000  # the ranks' exec timers fire within 1.5 s of each other
    tid = pid + 12
    head = f"({pid},{PNAME}):{DATE}-"
    stage = "[TaskExecStage][Timeout][HOST_TS]"
    where = "task_exception_handler.cc"
    tag = f"AllReduce_{job.world}"
    peer = job.root_rank
    nr = (rank + 1) % job.processes

    def line(level: str, offset: int, number: int, message: str) -> None:
        add(f"[{level}] HCCL{head}{_clock(at + offset)} [{where}:{number}] [{tid}]{message}")

    line("INFO", 0, 1460, "[TaskExceptionHandler][Callback]begin to execute hccl task "
         "exception callback function.")  # fmt: skip
    line("ERROR", 12, 1034, f"{stage}Task run failed, context sequence before error task is "
         "[NotifyRecord:NR(rank,id), NotifyWait:NW(rank,id), Memcpy:M(rank), Reduce: R(rank), "
         "InlineReduce:IR(rank), RDMASend:RS(rank,id)]:")  # fmt: skip
    line("ERROR", 15, 1053, f"{stage}NR({nr},1a2b),M({nr}),RS({nr},7f),NW({peer},3c4d),")
    line("ERROR", 17, 1058, f"{stage} end.")
    line("ERROR", 20, 1303, f"{stage}Task from HCCL run failed.")
    line("ERROR", 24, 26, f"{stage}Task run failed, base information is streamID:[5], "
         f"taskID[23], taskType[Notify Wait], tag[{tag}], AlgType(level 0-1-2):"
         "[fullmesh-ring-NHR].")  # fmt: skip
    line("ERROR", 27, 31, f"{stage}Task run failed, para information is notify "
         f"id:[0x0000000100000034], stage:[0], remote rank:[{peer}], tag[{tag}].")  # fmt: skip
    line("ERROR", 30, 43, f"{stage}Task run failed, groupRank information is "
         f"group:[{job.world}], user define information[], rankSize[{job.processes}], "
         f"rankId[{rank}], tag[{tag}].")  # fmt: skip
    line("ERROR", 33, 37, f"{stage}Task run failed, opData information is "
         f"timeStamp:[{DATE}-{_clock(FAILURE_US - 40_000)}], deviceId[{npu}], "
         f"index[{job.steps + 1}], count[1048576], reduceType[sum], src[0x12e7bf550000], "
         "dst[0x12e7bf560000], dataType[float16].")  # fmt: skip


@dataclass
class Tree:
    root: Path
    files: int
    lines: int
    size: int
    seconds: float


def write_job(job: Job, root: Path) -> Tree:
    """Write the plogs under `root`/<host>/ascend/log/run/plog/."""
    start = time.perf_counter()
    files = lines = size = 0
    for host in range(job.hosts):
        folder = root / host_name(host) / "ascend" / "log" / "run" / "plog"
        folder.mkdir(parents=True)
        for npu in range(job.npus_on(host)):
            name, text = plog(job, host, npu)
            data = text.encode()
            (folder / name).write_bytes(data)
            files += 1
            lines += data.count(b"\n")
            size += len(data)
    return Tree(root, files, lines, size, time.perf_counter() - start)


def in_memory(job: Job) -> list[tuple[str, str, bytes]]:
    """The same plogs as (host, path, data), for --verdict-step."""
    found: list[tuple[str, str, bytes]] = []
    for host in range(job.hosts):
        folder = f"/jobs/{host_name(host)}/ascend/log/run/plog"
        for npu in range(job.npus_on(host)):
            name, text = plog(job, host, npu)
            found.append((host_name(host), f"{folder}/{name}", text.encode()))
    return found


def engine_digest() -> str:
    """A digest of the parsers' and the engine's code (with the C first pass), so that figures
    are not mixed across versions of it (others may be editing it while the benchmark runs)."""
    package = Path(npuwatch.__file__).resolve().parent
    digest = hashlib.sha256()
    for folder in ENGINE_FOLDERS:
        paths = [*(package / folder).rglob("*.py"), *(package / folder).rglob("*.so")]
        for path in sorted(paths):
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def engine_version() -> str:
    package = Path(npuwatch.__file__).resolve().parent
    folders = [str(package / folder) for folder in ENGINE_FOLDERS]

    def git(*words: str) -> str:
        result = subprocess.run(
            ["git", "-C", str(package), *words], capture_output=True, text=True, check=False
        )
        return result.stdout.strip() if result.returncode == 0 else "?"

    dirty = git("status", "--porcelain", "--", *folders)
    state = "with uncommitted changes" if dirty else "as committed"
    return (
        f"npuwatch from {package.parent}, commit {git('rev-parse', '--short', 'HEAD')}; "
        f"{' and '.join(ENGINE_FOLDERS)} {state}, digest {engine_digest()}"
    )


# -- the measurements, in a fresh process per tree ------------------------------------------


def tree_files(root: Path) -> list[tuple[str, Path]]:
    paths = sorted(root.glob("*/ascend/log/run/plog/*.log"))
    return [(path.relative_to(root).parts[0], path) for path in paths]


def parse_round(files: list[tuple[str, Path]]) -> float:
    """CPU seconds of StreamParser over every file (reading the file is not counted)."""
    clock = LocalClock(timezone.utc)
    cpu = time.process_time
    spent = 0.0
    for host, path in files:
        data = path.read_bytes()
        start = cpu()
        parser = StreamParser(clock, path=str(path), host=host)
        parser.feed(data, 0)
        parser.flush()
        spent += cpu() - start
    return spent


@dataclass
class Round:
    correlator: Correlator
    parse_s: float = 0.0
    extract_s: float = 0.0
    add_s: float = 0.0
    items: int = 0


def extract_round(files: list[tuple[str, Path]]) -> Round:
    """Read, parse, extract and correlate file by file, as `scan` does; the CPU seconds of each
    part (reading the file is not counted)."""
    clock = LocalClock(timezone.utc)
    extractor = CollectiveExtractor()
    found = Round(Correlator())
    add = found.correlator.add_all
    cpu = time.process_time
    parse_s = extract_s = add_s = 0.0
    items = 0
    for host, path in files:
        data = path.read_bytes()
        t0 = cpu()
        parser = StreamParser(clock, path=str(path), host=host)
        records = parser.feed(data, 0)
        t1 = cpu()
        extracted = extractor.feed(records, 1)
        t2 = cpu()
        add(extracted)
        t3 = cpu()
        tail = parser.flush()
        first_line = sum(record.line_count for record in records) + 1
        t4 = cpu()
        more = extractor.feed(tail, first_line)
        t5 = cpu()
        add(more)
        t6 = cpu()
        parse_s += t1 - t0 + t4 - t3
        extract_s += t2 - t1 + t5 - t4
        add_s += t3 - t2 + t6 - t5
        items += len(extracted) + len(more)
    t0 = cpu()
    more = extractor.finish()
    t1 = cpu()
    add(more)
    found.parse_s = parse_s
    found.extract_s = extract_s + t1 - t0
    found.add_s = add_s + cpu() - t1
    found.items = items + len(more)
    return found


def select_round(files: list[tuple[str, Path]]) -> tuple[float, int]:
    """CPU seconds of the extractor's first step alone, picking the records that can matter
    (selection.host_positions, on the same batches as `extract_round`), and how many it picks;
    the parsing is not counted."""
    clock = LocalClock(timezone.utc)
    cpu = time.process_time
    spent = 0.0
    picked = 0
    for host, path in files:
        parser = StreamParser(clock, path=str(path), host=host)
        batches = (parser.feed(path.read_bytes(), 0), parser.flush())
        for records in batches:
            if records:
                start = cpu()
                picked += len(host_positions(records))
                spent += cpu() - start
    return spent, picked


def timed(function: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def peak_rss_kib() -> int:
    """VmHWM: the peak RSS of this process's own memory. (ru_maxrss of a process started by
    fork + exec also counts the parent's pages it held between the two.)"""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def traced_state(files: list[tuple[str, Path]], trace_verdict: bool) -> tuple[float, float | None]:
    """Traced MB of what a streaming round leaves behind (the correlator's state: its logs of
    facts and events and their evidence; and the parser's path cache), from an extra round
    under tracemalloc, and the traced peak during incidents() (when asked)."""
    gc.collect()
    tracemalloc.start()
    try:
        traced = extract_round(files)
        gc.collect()
        state = tracemalloc.get_traced_memory()[0]
        peak = None
        if trace_verdict:
            tracemalloc.reset_peak()
            traced.correlator.incidents()
            peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    return state / 1e6, peak


def measure_tree(root: Path, rounds: int, trace: bool) -> dict[str, Any]:
    tune_garbage_collector()  # as the command line does
    baseline = peak_rss_kib()
    digest = engine_digest()
    files = tree_files(root)
    parse_alone = min(parse_round(files) for _ in range(rounds))
    best: Round | None = None
    best_total = best_extract = best_add = float("inf")
    for _ in range(rounds):
        best = None  # free the last round's state first
        gc.collect()
        best = extract_round(files)
        best_total = min(best_total, best.parse_s + best.extract_s)
        best_extract = min(best_extract, best.extract_s)
        best_add = min(best_add, best.add_s)
    assert best is not None
    correlator, items = best.correlator, best.items
    incidents_s, incidents = timed(correlator.incidents)
    select_s, picked = min(select_round(files) for _ in range(rounds))
    peak = peak_rss_kib()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    verdict = verdict_of(incidents)
    del best, correlator, incidents
    state_mb: float | None = None
    incidents_peak_mb: float | None = None
    if trace:
        state_mb, incidents_peak_mb = traced_state(files, incidents_s <= TRACE_VERDICT_S)
    return {
        "parse_alone_s": parse_alone,
        "parse_extract_s": best_total,
        "extract_s": best_extract,
        "add_s": best_add,
        "select_s": select_s,
        "picked": picked,
        "items": items,
        "incidents_s": incidents_s,
        "baseline_kib": baseline,
        "peak_kib": peak,
        "maxrss_kib": maxrss,
        "state_mb": state_mb,
        "incidents_peak_mb": incidents_peak_mb,
        "verdict": verdict,
        "engine": digest,
    }


def run_child(root: Path, rounds: int, trace: bool) -> dict[str, Any]:
    source = str(Path(__file__).resolve().parent.parent / "src")
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": source + (os.pathsep + path if path else "")}
    result = subprocess.run(
        [
            sys.executable,
            __file__,
            "--measure-tree",
            str(root),
            "--rounds",
            str(rounds),
            *(["--trace"] if trace else []),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        sys.exit(f"the measuring process failed:\n{result.stderr}")
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def verdict_of(incidents: list[Incident]) -> dict[str, Any]:
    if not incidents:
        return {"incidents": 0}
    first = incidents[0]
    return {
        "incidents": len(incidents),
        "code": first.faultdiag_code,
        "roots": [[place.host, place.device, place.rank] for place in first.root_cause],
        "victims": len(first.victims),
        "summary": first.summary,
        "confidence": first.confidence,
    }


def verdict_is_right(verdict: dict[str, Any], job: Job) -> bool:
    host, npu = job.root
    return (
        verdict.get("code") == 113
        and [found[:2] for found in verdict.get("roots", [])] == [[host_name(host), npu]]
        and verdict.get("victims") == job.processes - 1
    )


def verdict_step(processes: int) -> None:
    """Only the verdict's inputs and the verdict, for `python -m cProfile -s cumtime`."""
    tune_garbage_collector()  # as the command line does
    job = Job(processes, BASE_STEPS)
    clock = LocalClock(timezone.utc)
    extractor = CollectiveExtractor()
    correlator = Correlator()
    for host, path, data in in_memory(job):
        parser = StreamParser(clock, path=path, host=host)
        records = parser.feed(data, 0)
        correlator.add_all(extractor.feed(records, 1))
        correlator.add_all(extractor.feed(parser.flush(), len(records) + 1))
    correlator.add_all(extractor.finish())
    seconds, incidents = timed(correlator.incidents)
    print(f"incidents() {seconds:.2f} s CPU: {verdict_of(incidents)}")


# -- the report -----------------------------------------------------------------------------


@dataclass
class Figures:
    processes: int
    traffic: str
    found: dict[str, Any]
    right: bool

    @property
    def share(self) -> float:
        return float(self.found["extract_s"] / self.found["parse_alone_s"])

    @property
    def verdict_s(self) -> float:
        return float(self.found["add_s"] + self.found["incidents_s"])

    @property
    def rss_mb(self) -> float:
        return float(self.found["peak_kib"] / 1024)

    @property
    def above_kib(self) -> float:
        """Peak RSS above the interpreter and its imports, per process of the job."""
        return float((self.found["peak_kib"] - self.found["baseline_kib"]) / self.processes)

    @property
    def state_kib(self) -> float | None:
        state = self.found["state_mb"]
        return None if state is None else float(state * 1e6 / 1024 / self.processes)


def measure(job: Job, traffic: str, scratch: Path, engine: str) -> Figures:
    root = scratch / f"{job.processes}-{traffic}"
    tree = write_job(job, root)
    rounds = 3 if job.processes <= 4000 else 1
    print(
        f"\n== {job.processes:,} processes ({job.hosts} hosts), {traffic} traffic: "
        f"{tree.files:,} files, {tree.lines:,} lines ({tree.lines / tree.files:.0f} a process), "
        f"{tree.size / 1e6:,.1f} MB; generated and written in {tree.seconds:.1f} s",
        flush=True,
    )
    wall = time.perf_counter()
    found = run_child(root, rounds, tree.lines <= TRACE_LINES)
    wall = time.perf_counter() - wall
    shutil.rmtree(root)
    lines = tree.lines
    parse_s, total_s, extract_s = (
        found["parse_alone_s"],
        found["parse_extract_s"],
        found["extract_s"],
    )
    best = f"fastest of {rounds}" if rounds > 1 else "one round"
    print(
        f"(1) parse alone (reference)   {lines / parse_s:>10,.0f} lines/s  "
        f"({parse_s:.2f} s CPU, {best})"
    )
    print(
        f"(2) parse + extract           {lines / total_s:>10,.0f} lines/s  ({total_s:.2f} s CPU); "
        f"CollectiveExtractor.feed {1e6 * extract_s / lines:.2f} µs a line = "
        f"{100 * extract_s / parse_s:.0f}% of parsing alone (target ≤ {100 * TARGET_SHARE:.0f}%); "
        f"by difference {1e6 * (total_s - parse_s) / lines:.2f} µs = "
        f"{100 * (total_s - parse_s) / parse_s:.0f}%"
    )
    select_s, picked = found["select_s"], found["picked"]
    read_s = extract_s - select_s
    print(
        f"    of which picking the lines that can matter {1e6 * select_s / lines:.2f} µs a line "
        f"= {100 * select_s / parse_s:.0f}%, and reading the {picked / job.processes:.0f} lines "
        f"a process it picks {1e6 * read_s / max(1, picked):.1f} µs each = "
        f"{100 * read_s / parse_s:.0f}%"
    )
    add_s, incidents_s = found["add_s"], found["incidents_s"]
    print(
        f"(3) time to verdict           {add_s + incidents_s:.2f} s CPU: add_all of "
        f"{found['items']:,} facts and events {add_s:.2f} s, incidents() {incidents_s:.2f} s"
        + (f" (target ≤ {TARGET_VERDICT_S:.0f} s)" if job.processes >= 16_000 else "")
    )
    figures = Figures(job.processes, traffic, found, False)
    print(
        f"(4) peak RSS                  {figures.rss_mb:,.0f} MB (ru_maxrss "
        f"{found['maxrss_kib'] / 1024:,.0f} MB; interpreter and imports "
        f"{found['baseline_kib'] / 1024:.0f} MB, {figures.above_kib:.1f} KiB a process above "
        f"them)" + (f" (target ≤ {TARGET_RSS_MB} MB)" if job.processes >= 16_000 else "")
    )
    state, peak = found["state_mb"], found["incidents_peak_mb"]
    if state is None:
        traced = f"not traced ({lines:,} lines: a traced round would take long)"
    else:
        traced = f"{state:,.1f} MB after all is in ({figures.state_kib:.1f} KiB a process), "
        traced += (
            f"{peak:,.1f} MB at the peak of incidents()"
            if peak is not None
            else f"incidents() not traced (it takes {incidents_s:.0f} s)"
        )
    print(f"    tracemalloc, an extra round: {traced}")
    verdict = found["verdict"]
    figures.right = verdict_is_right(verdict, job)
    host, npu = job.root
    print(
        f"(5) verdict {'right' if figures.right else 'WRONG'}: {verdict.get('incidents')} "
        f"incident(s); the first: FaultDiag {verdict.get('code')}, confidence "
        f"{verdict.get('confidence', 0):.2f}, root cause {verdict.get('roots')} (expected "
        f"{host_name(host)} NPU {npu}, rank {job.root_rank}), {verdict.get('victims')} victims"
    )
    print(f"    {verdict.get('summary')}")
    print(f"    (measured in {wall:.0f} s wall time)", flush=True)
    if found["engine"] != engine:
        print(
            f"    WARNING: the engine's code changed during the run (digest {found['engine']} "
            f"here, {engine} at the start): these figures are of another version",
            flush=True,
        )
    return figures


def summary(figures: list[Figures]) -> None:
    print("\n== summary")
    print(
        f"{'processes':>10} {'traffic':>8} {'extract':>8} {'verdict':>9} {'peak RSS':>9} "
        f"{'above/process':>14} {'state':>9} {'state/process':>14}"
    )
    for found in figures:
        state, per_process = found.found["state_mb"], found.state_kib
        traced = (
            f"{'-':>9} {'-':>14}"
            if state is None or per_process is None
            else f"{state:>6,.1f} MB {per_process:>10.1f} KiB"
        )
        print(
            f"{found.processes:>10,} {found.traffic:>8} {100 * found.share:>7.0f}% "
            f"{found.verdict_s:>8.2f}s {found.rss_mb:>6,.0f} MB {found.above_kib:>10.1f} KiB "
            f"{traced}"
        )
    for traffic in ("base", "10x"):
        series = [found for found in figures if found.traffic == traffic]
        for smaller, larger in pairwise(series):
            grow = larger.processes / smaller.processes
            large, small = larger.state_kib, smaller.state_kib
            state = "" if large is None or small is None else f", traced state ×{large / small:.2f}"
            print(
                f"{traffic:>4} {smaller.processes:,} -> {larger.processes:,} processes "
                f"(×{grow:.0f}): per process, RSS above the interpreter "
                f"×{larger.above_kib / smaller.above_kib:.2f}{state} (linear: ×1); time to "
                f"verdict ×{larger.verdict_s / smaller.verdict_s:.1f} (linear: ×{grow:.0f})"
            )
    missed: list[str] = []
    for found in figures:
        name = f"{found.processes:,} processes, {found.traffic}"
        if found.share > TARGET_SHARE:
            missed.append(f"extraction ≤ {100 * TARGET_SHARE:.0f}% ({name})")
        if found.processes >= 16_000 and found.verdict_s > TARGET_VERDICT_S:
            missed.append(f"verdict ≤ {TARGET_VERDICT_S:.0f} s ({name})")
        if found.processes >= 16_000 and found.rss_mb > TARGET_RSS_MB:
            missed.append(f"peak RSS ≤ {TARGET_RSS_MB} MB ({name})")
        if not found.right:
            missed.append(f"the verdict ({name})")
    print("targets missed: " + ("; ".join(missed) if missed else "none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", default="1000,4000,16000")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--scratch", type=Path, help="write the trees here (default: a temp dir)")
    parser.add_argument(
        "--verdict-step",
        type=int,
        metavar="PROCESSES",
        help="only build the verdict's input in memory and run incidents(), for cProfile",
    )
    parser.add_argument("--measure-tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_tree is not None:
        print(json.dumps(measure_tree(args.measure_tree, args.rounds, args.trace)))
        return
    if args.verdict_step is not None:
        verdict_step(args.verdict_step)
        return
    sizes = QUICK_SIZES if args.quick else tuple(int(n) for n in args.processes.split(","))
    print(
        f"python {sys.version.split()[0]}, C first pass: {first_pass.NATIVE}, one core of "
        f"{os.cpu_count()}. Each job: hosts × {NPUS} NPUs, one plog a process, world + "
        f"TP({TP_SIZE}) + DP communicators; host {ROOT_HOST} NPU {ROOT_NPU} has an AI Core "
        f"error, the {EXEC_TIMEOUT_S} s exec timeout fires on every other rank; healthy "
        f"traffic {4 * BASE_STEPS} lines a process (base) or {4 * BASE_STEPS * LOUD_FACTOR} "
        "(10x). Measured in a fresh process per tree, which reads the files one by one."
    )
    print(f"engine: {engine_version()}")
    engine = engine_digest()
    figures: list[Figures] = []
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        for processes in sizes:
            for traffic, steps in (("base", BASE_STEPS), ("10x", BASE_STEPS * LOUD_FACTOR)):
                figures.append(measure(Job(processes, steps), traffic, Path(scratch), engine))
    summary(figures)
    if not all(found.right for found in figures):
        sys.exit(1)


if __name__ == "__main__":
    main()
