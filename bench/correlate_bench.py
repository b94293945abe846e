"""The cross-device root-cause engine on a failed job of 1,000 to 16,000 processes.

The target (issue): "`bench/correlate_bench.py` gains an init failure and a link-setup failure
at 16,000 processes: verdict ≤ 2 s and ≤ 500 MB, as for the execution-time faults; print
extraction cost per line beside the parser alone in the same run (today 1.9–2.7×; target
≤ 1.3×)."

Generates the CANN plogs of one failed training job: H hosts × 16 NPUs, one process and one
plog per NPU, in host folders, in one of three scenarios (`--scenarios`):

  exec  Every process joins a world communicator (HCCL_ENV, root-info init, SetupAgent and
        hcclCommInitInfo lines), a TP sub-communicator of the 8 NPUs of its half host and a DP
        sub-communicator of the same NPU on every host. One device (host 7, NPU 3) fails with
        an AI Core error; every other rank times out HCCL_EXEC_TIMEOUT (1836 s) later in the
        world AllReduce, with a Notify Wait task-exception block naming the failed rank
        (formats/hccl.md H3.1). Healthy traffic: training steps (HCCL Entry-HcclAllReduceInner,
        RUNTIME, GE lines). Planted verdict: first_error_not_timeout, host 7 NPU 3.
  init  Communicator init through root info (formats/hccl-init-and-link.md §1.1): rank 0 is
        the root-info server (Entry-HcclGetRootInfo, find nic, HCCP RaSocketListenStart on its
        host IP, HcclGetRootInfo success); every rank logs find nic, Entry-HcclCommInitRootInfo-
        Inner, SetupAgent and HCCP RaSocketBatchConnect to the root. Three ranks spread over
        the job chose the host's second interface (find nic[..%eth1]) while the root listens on
        eth0: they never reach it. At HCCL_CONNECT_TIMEOUT (120 s) the root logs `topo exchange
        server get socket timeout`, `tag[<identifier>]` and the ranks that did connect (8
        agent ids a line: 2,000 lines at 16,000 processes) and `failed to connect rankList`;
        the three log the agent-side `topo exchange agent get socket timeout`; every other
        rank, connected, then fails waiting for the rank table (`receive msg length from
        fdhandle failed`, A6), as HCCL does; each ends with `[InitCommRootInfo]Init failed`.
        Healthy traffic: start-up lines of GE, RUNTIME and ACL before init. Planted verdict:
        init_nic_mismatch, the three ranks.
  link  Link setup (§1.2, formats/hccl.md H3.2) at the first world AllReduce after an init
        that succeeded (the init lines of `init`, then hcclCommInitInfo of world, TP and DP).
        Host 7 NPU 3 hung right after init: it logs nothing more. Every other rank listens on
        its device NIC ([Start][Nic]Listen on ip, HCCP RaSocketListenStart), the client of
        each link connects (RaSocketBatchConnect), and at HCCL_CONNECT_TIMEOUT each logs `wait
        socket establish timeout, role[..] rank[r] timeout[120 s]`, `Wait links establish
        completed failed` and a LINK_ERROR_INFO table whose row names the rank it waited on:
        the hung rank for the ranks of its host and of its NPU index, else the rank of the same
        NPU index on its host, which waits on it. Healthy traffic: start-up lines. Planted
        verdict: link_setup_wait (or engine B's kinds that name it, once there), host 7 NPU 3.

Healthy traffic comes at a base amount (48 lines a process) and ten times more (`--traffic`).
Each tree is written once, then measured in a fresh process that reads the files one by one,
as `scan` does (reading is not timed). For each scenario, size and traffic level it prints

  (1) parsing alone (StreamParser over every file): the reference, measured in the same run,
      in lines/s;
  (2) parsing + CollectiveExtractor.feed in lines/s, and the cost of a line with extraction
      in parsings of that line (the ratio of the two rates; target ≤ 1.3×); the extractor's
      cost per line, timed around its calls and as the difference of the two runs, as a share
      of parsing alone (earlier target: ≤ 15 %); and its two parts: picking the records that
      can matter (selection.host_positions, timed alone on the same batches) and reading
      those it picks (the rest);
  (3) time to verdict once every fact and event is in, CPU and wall: Correlator.add_all (summed
      over the batches, as a scan adds them), then incidents() (target: ≤ 2 s at 16,000
      processes);
  (4) peak RSS of that process (VmHWM; ru_maxrss beside it), above the interpreter and per
      process of the job (target: ≤ 500 MB at 16,000 processes; it should grow linearly), and
      the tracemalloc size of the correlator's state from an extra traced round, with its
      peak during incidents(), where that is cheap;
  (5) the verdict: its kind and root cause, checked against the planted one (MISMATCH, and
      exit 1 at the end, if not). Timings are printed against their targets, never asserted.

CPU times are the fastest of 3 rounds for up to 4,000 processes, one round above. The engine's
code is digested at the start and in each measuring process: others may be editing it.
`--quick` runs every scenario once at 256 processes, base traffic, one round, untraced: a few
seconds (tests/test_bench_scripts.py runs it).

    python bench/correlate_bench.py [--processes 1000,4000,16000] [--scenarios exec,init,link]
        [--traffic base,10x] [--quick]
    python -m cProfile -s cumtime bench/correlate_bench.py --verdict-step 4000 --scenarios init
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import npuwatch
from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.incident import Incident
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import first_pass
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.selection import host_positions
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock

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
CONNECT_TIMEOUT_S = 120
"""HCCL_CONNECT_TIMEOUT of the init and link scenarios (HCCL's default)."""
ROOT_PORT = 60000
DEVICE_PORT = 16666
INIT_CALL_US = START_US + 60_000_000
"""The init and link scenarios: a minute of start-up (model build, device memory), then the
framework calls HcclGetRootInfo on rank 0 and HcclCommInitRootInfo everywhere."""
ROOT_LISTEN_US = INIT_CALL_US + 1_100
"""When the root-info server of rank 0 listens on its host NIC (hccl-init-and-link.md R4)."""
FIRST_OP_US = INIT_CALL_US + 40_000_000
"""The link scenario: the first collective of the world communicator, whose links are set up
then (§1.2)."""
QUICK_SIZES = (256,)
TARGET_SHARE = 0.15
TARGET_RATIO = 1.3
"""Parsing and extraction ≤ 1.3× parsing alone, per line."""
TRAFFIC = {"base": BASE_STEPS, "10x": BASE_STEPS * LOUD_FACTOR}
"""Steps of healthy traffic (4 lines each) a process at each level."""
SCENARIOS = {
    "exec": f"execution: host {ROOT_HOST} NPU {ROOT_NPU} has an AI Core error, the "
    f"{EXEC_TIMEOUT_S} s exec timeout fires on every other rank (Notify Wait); healthy traffic: "
    "training steps",
    "init": "communicator init through root info: 3 ranks chose the host's eth1, the root "
    "(rank 0) listens on eth0; the root times out listing all others as connected, the 3 time "
    "out connecting, the others get no rank table; healthy traffic: start-up lines",
    "link": f"link setup at the first world AllReduce: host {ROOT_HOST} NPU {ROOT_NPU} hung "
    "after init; every other rank's socket timeout and LINK_ERROR_INFO row name it, or a rank "
    "of its host that waits on it; healthy traffic: start-up lines",
}
TARGET_VERDICT_S = 2.0
TARGET_RSS_MB = 500
ENGINE_FOLDERS = ("parsers", "correlation")
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
    scenario: str = "exec"
    """`exec`, `init` or `link` (SCENARIOS)."""

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

    def init_end(self, start_us: int) -> int:
        """The end of init, a rendezvous of every member: 4 s after the processes started
        (`start_us`), or later on a job so large that the last host joins after that (each
        host starts 3 ms after the one before it and joins 1.2 s after its start): every
        file stays in time order."""
        return start_us + max(INIT_END_US - START_US, self.hosts * 3_000 + 1_300_000)

    @property
    def strays(self) -> tuple[int, ...]:
        """The ranks of the init scenario that never reach the root: spread over the job,
        never the root-info rank 0."""
        size = self.processes
        return tuple(sorted({size // 3 + 5, 2 * size // 3 + 9, size - 2} - {0}))

    def peer_of(self, rank: int) -> int:
        """The rank a rank of the link scenario waits on in link setup: the hung rank for the
        ranks of its host and its NPU index (its server and its plane); for the others, the
        rank of the same NPU index on the hung rank's host, which itself waits on it."""
        hung_host, hung_npu = self.root
        host, npu = divmod(rank, NPUS)
        if host == hung_host or npu == hung_npu:
            return self.root_rank
        return hung_host * NPUS + npu


def plog(job: Job, host: int, npu: int) -> tuple[str, str]:
    """The plog file name and text of one process."""
    name, before, failure = plog_parts(job, host, npu)
    return name, "\n".join(before + failure) + "\n"


def plog_parts(job: Job, host: int, npu: int) -> tuple[str, list[str], list[str]]:
    """The plog file name of one process, its lines before the failure and from it on."""
    if job.scenario == "init":
        return _init_parts(job, host, npu)
    if job.scenario == "link":
        return _link_parts(job, host, npu)
    return _exec_parts(job, host, npu)


def _exec_parts(job: Job, host: int, npu: int) -> tuple[str, list[str], list[str]]:
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
    init_end = job.init_end(START_US)
    settled = init_end + rank  # the end of init is a rendezvous of all members
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
    gap = (FAILURE_US - init_end - 2_000_000) // max(1, job.steps) // 1000 * 1000
    now = init_end + 1_000_000
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


def stray_ip(host: int) -> str:
    """The address of a host's second interface (eth1), which the init scenario's stray ranks
    chose."""
    return f"172.{16 + host // 250}.{host % 250}.1"


def _startup(
    add: Callable[[str], None], pid: int, npu: int, start: int, end: int, steps: int
) -> None:
    """Start-up lines of other modules before HCCL's init (4 a step): graph building, device
    memory, ACL calls; none of them an HCCL line."""
    gap = max(1000, (end - start) // max(1, steps))
    head = f"({pid},{PNAME}):{DATE}-"
    now = start
    for step in range(steps):
        now += gap
        stamp = _clock(now)[:-3]
        add(
            f"[INFO] GE{head}{stamp}000 [graph_manager.cc:1320]{pid} PreRun:[GEPERFTRACE] The "
            f"time cost of GraphManager::stages is [{(step * 7919) % 100_000}] micro second."
        )
        add(
            f"[INFO] RUNTIME{head}{stamp}210 [api_impl.cc:1590] {pid + 1} DevMalloc: device "
            f"malloc mem=0x12c0c{(step * 2654435761) % 0xFFFFFFF:07x}, "
            f"size={4096 * (step % 97 + 1)}"
        )
        add(
            f"[INFO] ASCENDCL{head}{stamp}380 [model.cpp:1204]{pid} aclmdlLoadFromMem: start to "
            f"execute aclmdlLoadFromMem, modelSize = {1_048_576 + step}, deviceId = {npu}."
        )
        add(
            f"[INFO] GE{head}{stamp}560 [op_tiling_manager.cc:102][EVENT]{pid} ~FuncPerfScope:"
            "[GEPERFTRACE] The time cost of OpTilingManager::LoadSo is "
            f"[{(step * 104729) % 200_000}] micro second."
        )


class _Writer:
    """Lines of one process: HCCL and HCCP lines with its pid and a thread."""

    def __init__(self, pid: int, add: Callable[[str], None]) -> None:
        self.pid = pid
        self.add = add

    def hccl(self, level: str, us: int, where: str, message: str, tid: int | None = None) -> None:
        self.add(
            f"[{level}] HCCL({self.pid},{PNAME}):{DATE}-{_clock(us)} [{where}] "
            f"[{self.pid if tid is None else tid}]{message}"
        )

    def hccp(self, us: int, where: str, message: str) -> None:
        line = where.split(":")[1]
        self.add(
            f"[INFO] HCCP({self.pid},{PNAME}):{DATE}-{_clock(us)} [{where}]tid:{self.pid + 2},"
            f"{message.replace('(LINE)', f'({line})')}"
        )


def _init_start(job: Job, host: int, npu: int, w: _Writer, nic_ip: str, nic: str) -> int:
    """aclInit, start-up, HCCL's settings, the root-info server (rank 0), and the first steps
    of HcclCommInitRootInfo up to the connect to the root (formats/hccl-init-and-link.md
    §1.1: R1-R5, A1-A3). Returns the time of the connect."""
    pid, rank, size, world = w.pid, host * NPUS + npu, job.processes, job.world
    skew = host * 3_000 + npu * 200
    root_ip = host_ip(0)
    w.add(
        f"[INFO] ASCENDCL({pid},{PNAME}):{DATE}-{_clock(START_US + skew)} [acl.cpp:218]{pid} "
        "aclInit: start to execute aclInit"
    )
    _startup(w.add, pid, npu, START_US + skew + 1_000, INIT_CALL_US - 10_000, job.steps)
    call = INIT_CALL_US + skew
    w.hccl("INFO", call - 2_000, "externalinput.cc:598",
           f"[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [{CONNECT_TIMEOUT_S}]s")  # fmt: skip
    w.hccl("INFO", call - 1_994, "externalinput.cc:558",
           f"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [{EXEC_TIMEOUT_S}]s")  # fmt: skip
    if rank == 0:
        w.hccl("INFO", call + 200, "op_base.cc:1320",
               "Entry-HcclGetRootInfo:rootInfo[0x7fffcd65f130], deviceLogicId[0]")  # fmt: skip
        w.hccl(
            "INFO",
            call + 600,
            "sal.cc:432",
            f"nic class[normal]: find nic[{root_ip}%eth0] success.",
        )
        w.hccl("INFO", call + 800, "topoinfo_detect.cc:226", "[Setup][Server] user not set base "
               "port and port range, use default port range[60000, 60015]")  # fmt: skip
        w.hccp(ROOT_LISTEN_US, "ra_host.c:820", "RaSocketListenStart(LINE) : Input parameters: "
               f"[0]th, phyId[0], localIp[{root_ip}], port[{ROOT_PORT}]")  # fmt: skip
        w.hccl("INFO", ROOT_LISTEN_US + 60, "network_manager.cc:1250", "[Start][HostNetAndListen]"
               f"Listen on ip[{root_ip}%eth0], port[{ROOT_PORT}] success, devPhyId[0], "
               "devLogicId[0], isAutoPort[0]")  # fmt: skip
        w.hccl("INFO", ROOT_LISTEN_US + 400, "op_base.cc:1351", "[HCCL_TRACE]HcclGetRootInfo "
               f"success, take time [1300]us, identifier[{world}]")  # fmt: skip
    joined = call + 1_200_000
    w.hccl(
        "INFO", joined - 300, "sal.cc:432", f"nic class[normal]: find nic[{nic_ip}%{nic}] success."
    )
    w.hccl("INFO", joined, "op_base.cc:1845",
           f"Entry-HcclCommInitRootInfoInner:ranks[{size}], rank[{rank}], rootinfo: host "
           f"ip[{root_ip}] port[{ROOT_PORT}] nicDeploy[1] identifier[{world}], "
           f"deviceLogicId[{npu}]")  # fmt: skip
    w.hccl("INFO", joined + 400, "topoinfo_detect.cc:505",
           f"[HCCL_TRACE][Flat]SetupAgent rankNum[{size}], rank[{rank}], rootInfo "
           f"identifier[{world}], server[{nic_ip}%{nic}], serverPort[{ROOT_PORT}]deviceType[4], "
           f"logicDevId[{npu}], phydevId[{npu}], deviceIp[{device_ip(host, npu)}]")  # fmt: skip
    connect = joined + 900
    w.hccp(connect, "ra_host.c:703", "RaSocketBatchConnect(LINE) : Input parameters: [0]th, "
           f"phyId[{npu}], localIp[{nic_ip}], remoteIp[{root_ip}], port[{ROOT_PORT}], "
           f"tag[topo_detect_default_tag_{world}_{ROOT_PORT}], cnt[1]")  # fmt: skip
    return connect


def _init_failed(w: _Writer, job: Job, host: int, npu: int, at: int) -> None:
    """A8: the failure of HcclCommInitRootInfo, naming the communicator."""
    w.hccl("ERROR", at, "op_base.cc:1868",
           f"[InitCommRootInfo]Init failed, return[0x5000009], rankNum[{job.processes}], "
           f"rank[{host * NPUS + npu}], rootInfo identifier[{job.world}], "
           f"server[{host_ip(host)}], logicDevId[{npu}]")  # fmt: skip


def _no_rank_table(w: _Writer, at: int) -> None:
    """A6: connected to the root, but the rank table never came (it gave up)."""
    root_ip = host_ip(0)
    w.hccl(
        "ERROR",
        at,
        "topoinfo_exchange_base.cc:75",
        "[InitGroupStage][RanktableDetect]receive msg length from fdhandle failed, ret[9]",
    )
    w.hccl("ERROR", at + 9, "topoinfo_exchange_base.cc:78",
           f"Current rank get socket with server[{root_ip}] success, but wait for recv rankTable "
           "from server failed, maybe due to following reasons:")  # fmt: skip
    w.hccl("ERROR", at + 20, "topoinfo_exchange_base.cc:82",
           f"1. client wait for recv timeout, please check [ERROR] info in server[{root_ip}], "
           "whether all ranks were executed to create the communication")  # fmt: skip


def _init_parts(job: Job, host: int, npu: int) -> tuple[str, list[str], list[str]]:
    """Communicator init through root info where a few ranks never reach the root: they chose
    the host's second interface (eth1), the root listens on eth0. At HCCL_CONNECT_TIMEOUT the
    root logs its timeout, the communicator (`tag[..]`) and the ranks that did connect; each
    connected rank then fails waiting for the rank table (A6) and each stray rank times out
    connecting (A5, agent side)."""
    pid = pid_of(host, npu)
    rank = host * NPUS + npu
    stray = rank in job.strays
    nic_ip, nic = (stray_ip(host), "eth1") if stray else (host_ip(host), "eth0")
    lines: list[str] = []
    w = _Writer(pid, lines.append)
    connect = _init_start(job, host, npu, w, nic_ip, nic)
    if not stray:
        w.hccl("INFO", connect + 700, "topoinfo_exchange_agent.cc:24",
               "[TryRecvFromServer]recvMes TopoExchangeCheckMessage")  # fmt: skip
    failure: list[str] = []
    w.add = failure.append
    t_err = ROOT_LISTEN_US + CONNECT_TIMEOUT_S * 1_000_000
    if rank == 0:
        last = _root_timeout(job, w, t_err)
        _no_rank_table(w, last + 2_000)
        _init_failed(w, job, host, npu, last + 2_100)
    elif stray:
        at = connect + CONNECT_TIMEOUT_S * 1_000_000
        root = f"{host_ip(0)}:{ROOT_PORT}"
        w.hccl("ERROR", at, "topoinfo_exchange_agent.cc:397",
               "[InitGroupStage][RanktableDetect] topo exchange agent get socket timeout! "
               f"timeout[{CONNECT_TIMEOUT_S} s]")  # fmt: skip
        w.hccl(
            "ERROR",
            at + 12,
            "topoinfo_exchange_agent.cc:410",
            "current rank connect to server timeout, maybe due to following reasons:",
        )
        w.hccl("ERROR", at + 20, "topoinfo_exchange_agent.cc:412",
               f"1. local host ip is [{nic_ip}], server host ip and port is [{root}], Please "
               "check the network connectivity.")  # fmt: skip
        w.hccl("ERROR", at + 27, "topoinfo_exchange_agent.cc:418",
               f"2. Check whether any other exceptions have occurred on server[{host_ip(0)}] or "
               "whether the time difference between ranks in creating the communicator exceeds "
               "the timeout.")  # fmt: skip
        _init_failed(w, job, host, npu, at + 20_000_000)  # after HCCL's 20 s sleep
    else:
        at = t_err + 1_500 + (rank * 37) % 400_000  # the root closes every socket at once
        _no_rank_table(w, at)
        _init_failed(w, job, host, npu, at + 90)
    return f"plog-{pid}_20251103090000{npu:03d}.log", lines, failure


def _root_timeout(job: Job, w: _Writer, at: int) -> int:
    """R6: the root's side of the timeout, the communicator, and the ranks that did connect
    (8 sixteen-digit agent ids a line), as HCCL prints them (formats/hccl.md H3.3). Returns the
    time of its last line."""
    tid = w.pid + 17
    strays = set(job.strays)
    connected = [rank for rank in range(job.processes) if rank not in strays]
    ids = [f"[{rank:016d}]" for rank in connected]
    rows = [ids[i : i + 8] for i in range(0, len(ids), 8)]
    waiting = ",".join(f"[{rank:016d}]" for rank in job.strays[:3])
    w.hccl("INFO", at - 60_000_000, "topoinfo_exchange_server.cc:476",
           f"[HCCL_TRACE] succ sockets is [{len(connected)}], waiting sockets is "
           f"[{len(job.strays)}], wait sockets rankid: {waiting}", tid)  # fmt: skip
    w.hccl("ERROR", at, "topoinfo_exchange_server.cc:113", "[Get][Connection] topo exchange "
           f"server get socket timeout! timeout[{CONNECT_TIMEOUT_S} s]", tid)  # fmt: skip
    w.hccl(
        "ERROR",
        at + 40,
        "topoinfo_exchange_server.cc:115",
        f"[Get][Connection] tag[{job.world}]",
        tid,
    )
    shown = "[InitGroupStage][DisplayConnectedRank]"
    w.hccl(
        "ERROR",
        at + 52,
        "topoinfo_exchange_server.cc:529",
        f"{shown}total connected num is [{len(connected)}],line num is [{len(rows)}]",
        tid,
    )
    w.hccl(
        "ERROR",
        at + 60,
        "topoinfo_exchange_server.cc:533",
        f"{shown}need connect rankNum is [{job.processes}]",
        tid,
    )
    for n, row in enumerate(rows):
        w.hccl("ERROR", at + 70 + n, "topoinfo_exchange_server.cc:546",
               f"{shown}connected rankinfo[LINE {n}]: {','.join(row)};", tid)  # fmt: skip
    missing = "".join(f"{rank}," for rank in job.strays)
    w.hccl(
        "ERROR",
        at + 80 + len(rows),
        "topoinfo_exchange_server.cc:518",
        f"[TopoInfoExchangeServer]failed to connect rankList:[{missing}]",
        tid,
    )
    return at + 80 + len(rows)


def _link_parts(job: Job, host: int, npu: int) -> tuple[str, list[str], list[str]]:
    """Link setup at the first collective of the world communicator after a successful init,
    where one rank (the failing device of every scenario) hung right after init: it logged its
    init and nothing more. Every other rank listens on its device NIC, the client of each link
    connects, and at HCCL_CONNECT_TIMEOUT each logs `wait socket establish timeout` and a
    LINK_ERROR_INFO row naming the rank it waited on (Job.peer_of): the hung rank, or a rank of
    the hung rank's host that itself waits on it (formats/hccl.md H3.2)."""
    pid = pid_of(host, npu)
    rank = host * NPUS + npu
    size, world = job.processes, job.world
    ip = host_ip(host)
    lines: list[str] = []
    w = _Writer(pid, lines.append)
    connect = _init_start(job, host, npu, w, ip, "eth0")
    w.hccl("INFO", connect + 700, "topoinfo_exchange_agent.cc:24",
           "[TryRecvFromServer]recvMes TopoExchangeCheckMessage")  # fmt: skip
    settled = job.init_end(INIT_CALL_US) + rank
    tp = f"group_name_tp{host * 2 + npu // TP_SIZE}"
    dp = f"group_name_dp{npu}"
    for name, own, count, at in (
        (world, rank, size, settled),
        (tp, npu % TP_SIZE, TP_SIZE, settled + 200_000),
        (dp, host, job.dp_size(npu), settled + 400_000),
    ):
        w.hccl("INFO", at, "hccl_comm.cc:159",
               f"hcclCommInitInfo:commId[{name}], rank[{own}], totalRanks[{count}], "
               f"serverId[{ip}], deviceType[4],logicDevId[{npu}], identifier[{name}]")  # fmt: skip
    failure: list[str] = []
    if (host, npu) == job.root:
        return f"plog-{pid}_20251103090000{npu:03d}.log", lines, failure  # hung: nothing more
    w.add = failure.append
    start = FIRST_OP_US + (rank * 13) % 300_000
    own_ip = device_ip(host, npu)
    peer = job.peer_of(rank)
    peer_ip = device_ip(*divmod(peer, NPUS))
    client = rank > peer  # the smaller rank of a link is its server
    tag = f"AllReduce_{world}"
    w.hccl("INFO", start, "op_base.cc:2130",
           f"Entry-HcclAllReduceInner: tag[{tag}], sendBuf[0x12e7bf550000], "
           "recvBuf[0x12e7bf560000], count[1048576], dataType[float16], op[sum], "
           f"localRank[{rank}], streamId[5], comm[0x331c9c00], deviceLogicId[{npu}], "
           "capture status[0], model id[0].", pid + 3)  # fmt: skip
    w.hccp(start + 850, "ra_host.c:820", "RaSocketListenStart(LINE) : Input parameters: [0]th, "
           f"phyId[{npu}], localIp[{own_ip}], port[{DEVICE_PORT}]")  # fmt: skip
    w.hccl("INFO", start + 900, "network_manager.cc:831",
           f"[Start][Nic]Listen on ip[{own_ip}], port[{DEVICE_PORT}] success, devPhyId[{npu}], "
           f"devLogicId[{npu}], isAutoPort[0]")  # fmt: skip
    if client:
        w.hccp(start + 2_000, "ra_host.c:703", "RaSocketBatchConnect(LINE) : Input parameters: "
               f"[0]th, phyId[{npu}], localIp[{own_ip}], remoteIp[{peer_ip}], "
               f"port[{DEVICE_PORT}], tag[{world}_Inter_MultiSocket_{rank}_0], cnt[1]")  # fmt: skip
    at = start + CONNECT_TIMEOUT_S * 1_000_000 + (rank * 7) % 1_500_000
    tid = pid + 45
    role = "client" if client else "server"
    w.hccl("ERROR", at, "hccl_socket_manager.cc:796",
           "[Wait][LinkEstablish]wait socket establish timeout, "
           f"role[{int(client)}] rank[{rank}] timeout[{CONNECT_TIMEOUT_S} s]", tid)  # fmt: skip
    w.hccl(
        "ERROR",
        at + 35,
        "hccl_socket_manager.cc:400",
        f"[Create][Sockets]Wait links establish completed failed, local role is {role}. ret[9]",
        tid,
    )
    for offset, number, text in (
        (41, 622, "   _________________________LINK_ERROR_INFO___________________________"),
        (45, 623, f"   |  comm error, device[{npu}] "),
        (50, 624, "   |  dest_ip(user_rank)  |   dest_port   |  src_ip(user_rank)   |   "
                  "src_port   |   MyRole   |   Status   |    TlsStatus   |"),
        (53, 625, "   |----------------------|---------------|----------------------|"
                  "--------------|------------|------------|----------------|"),
    ):  # fmt: skip
        w.hccl("ERROR", at + offset, f"hccl_socket_manager.cc:{number}", text, tid)
    src_port = 40_000 + (rank * 7919) % 20_000 if client else 0
    w.hccl("ERROR", at + 60, "hccl_socket_manager.cc:579",
           f"   |  {peer_ip}({peer})   |  {DEVICE_PORT}  |   {own_ip}({rank})   |  {src_port}  |"
           f"  {role}  | time out |   DISABLE  | LinkInfo", tid)  # fmt: skip
    w.hccl(
        "ERROR",
        at + 80,
        "hccl_socket_manager.cc:406",
        "[CreateSockets]call trace: hcclRet -> 9",
        tid,
    )
    w.hccl("ERROR", at + 95, "transport_manager.cc:470", "[Alloc]call trace: hcclRet -> 9", tid)
    return f"plog-{pid}_20251103090000{npu:03d}.log", lines, failure


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
    add_wall_s: float = 0.0
    items: int = 0


def extract_round(files: list[tuple[str, Path]]) -> Round:
    """Read, parse, extract and correlate file by file, as `scan` does; the CPU seconds of each
    part (reading the file is not counted)."""
    clock = LocalClock(timezone.utc)
    extractor = CollectiveExtractor()
    found = Round(Correlator())
    add = found.correlator.add_all
    cpu = time.process_time
    wall = time.perf_counter
    parse_s = extract_s = add_s = add_wall_s = 0.0
    items = 0
    for host, path in files:
        data = path.read_bytes()
        t0 = cpu()
        parser = StreamParser(clock, path=str(path), host=host)
        records = parser.feed(data, 0)
        t1 = cpu()
        extracted = extractor.feed(records, 1)
        w2 = wall()
        t2 = cpu()
        add(extracted)
        t3 = cpu()
        w3 = wall()
        tail = parser.flush()
        first_line = sum(record.line_count for record in records) + 1
        t4 = cpu()
        more = extractor.feed(tail, first_line)
        w5 = wall()
        t5 = cpu()
        add(more)
        t6 = cpu()
        w6 = wall()
        parse_s += t1 - t0 + t4 - t3
        extract_s += t2 - t1 + t5 - t4
        add_s += t3 - t2 + t6 - t5
        add_wall_s += w3 - w2 + w6 - w5
        items += len(extracted) + len(more)
    t0 = cpu()
    more = extractor.finish()
    t1 = cpu()
    w1 = wall()
    add(more)
    found.parse_s = parse_s
    found.extract_s = extract_s + t1 - t0
    found.add_s = add_s + cpu() - t1
    found.add_wall_s = add_wall_s + wall() - w1
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


def timed_both(function: Callable[..., Any], *args: Any) -> tuple[float, float, Any]:
    """CPU and wall seconds of a call."""
    wall, start = time.perf_counter(), time.process_time()
    result = function(*args)
    return time.process_time() - start, time.perf_counter() - wall, result


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
    best_total = best_extract = best_add = best_add_wall = float("inf")
    for _ in range(rounds):
        best = None  # free the last round's state first
        gc.collect()
        best = extract_round(files)
        best_total = min(best_total, best.parse_s + best.extract_s)
        best_extract = min(best_extract, best.extract_s)
        best_add = min(best_add, best.add_s)
        best_add_wall = min(best_add_wall, best.add_wall_s)
    assert best is not None
    correlator, items = best.correlator, best.items
    incidents_s, incidents_wall_s, incidents = timed_both(correlator.incidents)
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
        "add_wall_s": best_add_wall,
        "select_s": select_s,
        "picked": picked,
        "items": items,
        "incidents_s": incidents_s,
        "incidents_wall_s": incidents_wall_s,
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
        "kind": first.kind,
        "code": first.faultdiag_code,
        "roots": [[place.host, place.device, place.rank] for place in first.root_cause],
        "victims": len(first.victims),
        "summary": first.summary,
        "confidence": first.confidence,
    }


@dataclass(frozen=True)
class Expected:
    """The planted verdict: its kind (one of these), its root cause and its victims."""

    kinds: tuple[str, ...]
    roots: list[list[Any]]
    """[host, device] of each root cause, in rank order."""
    victims: int

    def describe(self) -> str:
        places = ", ".join(f"{host} NPU {npu}" for host, npu in self.roots)
        return f"{' or '.join(self.kinds)}, root cause {places}, {self.victims:,} victims"


def expected(job: Job) -> Expected:
    host, npu = job.root
    if job.scenario == "init":
        strays = [divmod(rank, NPUS) for rank in job.strays]
        return Expected(
            ("init_nic_mismatch",),
            [[host_name(h), n] for h, n in strays],
            job.processes - len(strays),
        )
    if job.scenario == "link":
        # today's verdict of the waiting chain; engine B of formats/hccl-init-and-link.md §2.2,
        # once there, says why the rank at its end never connected, as server or client of the
        # first row (it never listened, never connected, logged nothing after init: it hung)
        return Expected(
            (
                "link_setup_wait",
                "link_server_not_listening",
                "link_server_exited",
                "link_server_no_error",
                "link_client_exited",
                "link_client_not_connected",
            ),
            [[host_name(host), npu]],
            job.processes - 1,
        )
    return Expected(("first_error_not_timeout",), [[host_name(host), npu]], job.processes - 1)


def verdict_is_right(verdict: dict[str, Any], job: Job) -> bool:
    want = expected(job)
    return (
        verdict.get("kind") in want.kinds
        and [found[:2] for found in verdict.get("roots", [])] == want.roots
        and verdict.get("victims") == want.victims
    )


def verdict_step(processes: int, scenario: str) -> None:
    """Only the verdict's inputs and the verdict, for `python -m cProfile -s cumtime`."""
    tune_garbage_collector()  # as the command line does
    job = Job(processes, BASE_STEPS, scenario)
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
    scenario: str
    processes: int
    traffic: str
    found: dict[str, Any]
    right: bool

    @property
    def share(self) -> float:
        return float(self.found["extract_s"] / self.found["parse_alone_s"])

    @property
    def ratio(self) -> float:
        """Parsing and extraction beside parsing alone: the cost of a line with extraction, in
        parsings of that line (the inverse of the ratio of the two rates in lines/s)."""
        return float(self.found["parse_extract_s"] / self.found["parse_alone_s"])

    @property
    def verdict_s(self) -> float:
        return float(self.found["add_s"] + self.found["incidents_s"])

    @property
    def verdict_wall_s(self) -> float:
        return float(self.found["add_wall_s"] + self.found["incidents_wall_s"])

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


def measure(job: Job, traffic: str, scratch: Path, engine: str, quick: bool = False) -> Figures:
    root = scratch / f"{job.scenario}-{job.processes}-{traffic}"
    tree = write_job(job, root)
    rounds = 1 if quick else 3 if job.processes <= 4000 else 1
    print(
        f"\n== {job.scenario}: {SCENARIOS[job.scenario]}\n   {job.processes:,} processes "
        f"({job.hosts} hosts), {traffic} traffic: {tree.files:,} files, {tree.lines:,} lines "
        f"({tree.lines / tree.files:.0f} a process), {tree.size / 1e6:,.1f} MB; generated and "
        f"written in {tree.seconds:.1f} s",
        flush=True,
    )
    wall = time.perf_counter()
    found = run_child(root, rounds, not quick and tree.lines <= TRACE_LINES)
    wall = time.perf_counter() - wall
    shutil.rmtree(root)
    lines = tree.lines
    parse_s, total_s, extract_s = (
        found["parse_alone_s"],
        found["parse_extract_s"],
        found["extract_s"],
    )
    figures = Figures(job.scenario, job.processes, traffic, found, False)
    best = f"fastest of {rounds}" if rounds > 1 else "one round"
    print(
        f"(1) parse alone (reference)   {lines / parse_s:>10,.0f} lines/s  "
        f"({parse_s:.2f} s CPU, {best})"
    )
    print(
        f"(2) parse + extract           {lines / total_s:>10,.0f} lines/s  ({total_s:.2f} s CPU): "
        f"{figures.ratio:.2f}× parsing alone per line (target ≤ {TARGET_RATIO}×); "
        f"CollectiveExtractor.feed {1e6 * extract_s / lines:.2f} µs a line = "
        f"{100 * extract_s / parse_s:.0f}% of parsing alone (earlier target "
        f"≤ {100 * TARGET_SHARE:.0f}%); "
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
        f"(3) time to verdict           {add_s + incidents_s:.2f} s CPU, "
        f"{figures.verdict_wall_s:.2f} s wall: add_all of {found['items']:,} facts and events "
        f"{add_s:.2f} s CPU ({found['add_wall_s']:.2f} s wall), incidents() {incidents_s:.2f} s "
        f"CPU ({found['incidents_wall_s']:.2f} s wall)"
        + (f" (target ≤ {TARGET_VERDICT_S:.0f} s)" if job.processes >= 16_000 else "")
    )
    print(
        f"(4) peak RSS                  {figures.rss_mb:,.0f} MB (ru_maxrss "
        f"{found['maxrss_kib'] / 1024:,.0f} MB; interpreter and imports "
        f"{found['baseline_kib'] / 1024:.0f} MB, {figures.above_kib:.1f} KiB a process above "
        f"them)" + (f" (target ≤ {TARGET_RSS_MB} MB)" if job.processes >= 16_000 else "")
    )
    state, peak = found["state_mb"], found["incidents_peak_mb"]
    if state is None:
        traced = (
            "not traced (--quick)"
            if quick
            else f"not traced ({lines:,} lines: a traced round would take long)"
        )
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
    print(
        f"(5) verdict {'right' if figures.right else 'MISMATCH'}: {verdict.get('incidents')} "
        f"incident(s); the first: {verdict.get('kind')} (FaultDiag {verdict.get('code')}), "
        f"confidence {verdict.get('confidence', 0):.2f}, root cause {verdict.get('roots')}, "
        f"{verdict.get('victims')} victims"
    )
    print(f"    {verdict.get('summary')}")
    if not figures.right:
        print(
            f"    !!! MISMATCH: the planted verdict is {expected(job).describe()} !!!",
            flush=True,
        )
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
        f"{'scenario':>8} {'processes':>10} {'traffic':>8} {'×parse':>7} {'extract':>8} "
        f"{'verdict':>9} {'wall':>7} {'peak RSS':>9} {'above/process':>14} {'state':>9} "
        f"{'state/process':>14}  verdict"
    )
    for found in figures:
        state, per_process = found.found["state_mb"], found.state_kib
        traced = (
            f"{'-':>9} {'-':>14}"
            if state is None or per_process is None
            else f"{state:>6,.1f} MB {per_process:>10.1f} KiB"
        )
        verdict = found.found["verdict"]
        print(
            f"{found.scenario:>8} {found.processes:>10,} {found.traffic:>8} "
            f"{found.ratio:>6.2f}× {100 * found.share:>7.0f}% {found.verdict_s:>8.2f}s "
            f"{found.verdict_wall_s:>6.2f}s {found.rss_mb:>6,.0f} MB {found.above_kib:>10.1f} KiB "
            f"{traced}  {verdict.get('kind')} {verdict.get('roots')}"
            + ("" if found.right else " MISMATCH")
        )
    for scenario in SCENARIOS:
        for traffic in TRAFFIC:
            series = [f for f in figures if f.traffic == traffic and f.scenario == scenario]
            for smaller, larger in pairwise(series):
                grow = larger.processes / smaller.processes
                large, small = larger.state_kib, smaller.state_kib
                state = (
                    "" if large is None or small is None else f", traced state ×{large / small:.2f}"
                )
                print(
                    f"{scenario:>4} {traffic:>4} {smaller.processes:,} -> {larger.processes:,} "
                    f"processes (×{grow:.0f}): per process, RSS above the interpreter "
                    f"×{larger.above_kib / smaller.above_kib:.2f}{state} (linear: ×1); time to "
                    f"verdict ×{larger.verdict_s / smaller.verdict_s:.1f} (linear: ×{grow:.0f})"
                )
    missed: list[str] = []
    for found in figures:
        name = f"{found.scenario}, {found.processes:,} processes, {found.traffic}"
        if found.ratio > TARGET_RATIO:
            missed.append(f"extraction ≤ {TARGET_RATIO}× parsing ({name}: {found.ratio:.2f}×)")
        if found.processes >= 16_000 and found.verdict_s > TARGET_VERDICT_S:
            missed.append(f"verdict ≤ {TARGET_VERDICT_S:.0f} s ({name}: {found.verdict_s:.2f} s)")
        if found.processes >= 16_000 and found.rss_mb > TARGET_RSS_MB:
            missed.append(f"peak RSS ≤ {TARGET_RSS_MB} MB ({name}: {found.rss_mb:,.0f} MB)")
        if not found.right:
            missed.append(f"the verdict ({name}): MISMATCH")
    print("targets missed: " + ("; ".join(missed) if missed else "none"))


def _names(value: str, known: Iterable[str], what: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        sys.exit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="scenarios: " + "; ".join(f"{name}: {text}" for name, text in SCENARIOS.items()),
    )
    parser.add_argument("--processes", default="1000,4000,16000")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="exec, init, link")
    parser.add_argument("--traffic", default=",".join(TRAFFIC), help="base, 10x")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_SIZES[0]} processes, base traffic, one round, no tracing: seconds",
    )
    parser.add_argument("--scratch", type=Path, help="write the trees here (default: a temp dir)")
    parser.add_argument(
        "--verdict-step",
        type=int,
        metavar="PROCESSES",
        help="only build the verdict's input in memory and run incidents(), for cProfile "
        "(of the first of --scenarios)",
    )
    parser.add_argument("--measure-tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_tree is not None:
        print(json.dumps(measure_tree(args.measure_tree, args.rounds, args.trace)))
        return
    scenarios = _names(args.scenarios, SCENARIOS, "scenario")
    if args.verdict_step is not None:
        verdict_step(args.verdict_step, scenarios[0])
        return
    sizes = QUICK_SIZES if args.quick else tuple(int(n) for n in args.processes.split(","))
    traffics = ["base"] if args.quick else _names(args.traffic, TRAFFIC, "traffic")
    print(
        f"python {sys.version.split()[0]}, C first pass: {first_pass.NATIVE}, one core of "
        f"{os.cpu_count()}. Each job: hosts × {NPUS} NPUs, one plog a process; scenarios "
        f"{', '.join(scenarios)}; healthy traffic {4 * BASE_STEPS} lines a process (base) or "
        f"{4 * BASE_STEPS * LOUD_FACTOR} (10x). Measured in a fresh process per tree, which "
        "reads the files one by one."
    )
    print(f"engine: {engine_version()}")
    engine = engine_digest()
    figures: list[Figures] = []
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        for processes in sizes:
            for scenario in scenarios:
                for traffic in traffics:
                    job = Job(processes, TRAFFIC[traffic], scenario)
                    figures.append(measure(job, traffic, Path(scratch), engine, args.quick))
    summary(figures)
    if not all(found.right for found in figures):
        sys.exit(1)


if __name__ == "__main__":
    main()
