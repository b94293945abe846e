"""Write a large ~/ascend/log tree in the real CANN formats, for benchmarks.

Lines are drawn from templates of the body styles found in real plog and device logs (formats doc
§1.3), with the level mix of a busy DEBUG-enabled host, and with multi-line records (firmware
register dumps, FMK JSON dumps, TraceBack chains) sprinkled in. The output is deterministic for
a given seed.

    python bench/make_tree.py /tmp/tree --lines 1000000
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

_SINGLE_LINE_TEMPLATES = [
    # (weight, level choices, module, body template)
    (
        20,
        "DEBUG INFO",
        "RUNTIME",
        "[stream.cc:{line}] {tid} StreamSynchronize: stream_id={n}, task_id={m}, device_id={dev}, "
        "flip_num=0, timeout=-1ms",
    ),
    (
        0.1,
        "ERROR",
        "RUNTIME",
        "[task_info.cc:{line}]{tid} PrintErrorInfo:[EXEC][EXEC]Task exception! device_id={dev}, "
        "stream_id={n}, task_id={m}, retCode=0x91",
    ),
    (
        12,
        "DEBUG INFO",
        "GE",
        "[graph_manager.cc:{line}]{tid} PreRun:[GEPERFTRACE] The time cost of GraphManager::stages "
        "is [{m}] micro second.",
    ),
    (
        12,
        "INFO DEBUG",
        "HCCL",
        "[hccl_communicator.cc:{line}] [{tid}][TaskExecStage]AllReduce: tag[AllReduce_group_{n}], "
        "count[{m}], dataType[float16], op[sum], streamId[{n}]",
    ),
    (
        3,
        "INFO",
        "HCCL",
        "[externalinput.cc:{line}] [{tid}][HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s",
    ),
    (
        8,
        "INFO DEBUG",
        "TDT",
        "[process_mode_manager.cpp:{line}][Open][tid:{tid}] [ProcessModeManager] enter into open "
        "process deviceId[{dev}] rankSize[8]",
    ),
    (
        6,
        "DEBUG INFO",
        "DRV",
        "[ascend][curpid: {pid}, {tid}][drv][devmm][devmm_alloc_mem {line}]Alloc mem success. "
        "(size={m}; devid={dev}; va=0x12c0c00{n:05x})",
    ),
    (
        4,
        "INFO",
        "DRV",
        "[devdrv_pcie.c:{line}][devmng][drvGetDevInfo {line}] get device info, devid={dev} "
        "module_type=0 info_type=3",
    ),
    (
        5,
        "INFO DEBUG",
        "IDEDD",
        "[adx_dump_record.cpp:{line}][tid:{tid}]>>> dump record thread running, dev {dev}, "
        "queue size {n}",
    ),
    (
        4,
        "INFO",
        "PROFILING",
        "[prof_device_core.cpp:{line}] (tid:{tid}) Begin to flush data, module:DATA_PREPROCESS-{n}",
    ),
    (3, "INFO", "ATRACE", "[trace_recorder.c:{line}](tid:{tid}) trace session {n} saved."),
    (
        0.05,
        "ERROR",
        "HCCP",
        "[rs.c:{line}]tid:{tid},rs_socket_connect({line}) : connect to 10.0.{dev}.{n} timeout, "
        "ret:-110",
    ),
    (
        5,
        "DEBUG INFO",
        "ASCENDCL",
        "[memory.cpp:{line}]{tid} aclrtMemcpyAsync: [EXEC][DEFAULT]start to execute "
        "aclrtMemcpyAsync, size {m}",
    ),
    (3, "EVENT", "GE", "[gelib.cc:{line}]{tid} Initialize:[GEPERFTRACE] GE Init Start"),
    (
        0.5,
        "WARNING",
        "RUNTIME",
        "[engine.cc:{line}]{tid} ReportStatus: task queue of stream {n} is {m} deep, consider "
        "a larger HCCL_BUFFSIZE",
    ),
    (
        0.05,
        "ERROR",
        "ASCENDCL",
        "[device.cpp:{line}]{tid} aclrtSynchronizeDevice:[INIT][DEFAULT]wait for compute device "
        "to finish failed, runtime result = 507035.",
    ),
    (
        0.03,
        "ERROR",
        "GE",
        "[error_manager.cc:{line}]{tid} ReportInterErrMessage:report error_message, "
        "error_code:E30009, work_stream_id:11",
    ),
]
_LEVEL_OF_DUMP_HEADER = "ERROR"
_MODULE_SHORTCUTS = list(range(len(_SINGLE_LINE_TEMPLATES)))


def _header(level: str, module: str, pid: int, pname: str, moment: datetime) -> str:
    stamp = moment.strftime("%Y-%m-%d-%H:%M:%S")
    micros = moment.microsecond
    return f"[{level}] {module}({pid},{pname}):{stamp}.{micros // 1000:03d}.{micros % 1000:03d} "


def _multi_line(rng: random.Random, pid: int, pname: str, moment: datetime) -> list[str]:
    kind = rng.randrange(3)
    if kind == 0:  # firmware-style register dump under a RUNTIME error
        head = _header("ERROR", "RUNTIME", pid, pname, moment) + (
            f"[device_error_proc.cc:1409] {pid} ProcessStarsCoreErrorInfo:[INIT][DEFAULT]"
            "report error module_type=5, module_name=EZ9999"
        )
        dump = [
            f"<exception_print>HWS_REG_AIC_BASE_ADDR[{i}]=0x{rng.getrandbits(40):010x}"
            for i in range(rng.randrange(4, 12))
        ]
        return [head, *dump]
    if kind == 1:  # FMK JSON dump
        head = _header("INFO", "FMK", pid, pname, moment) + (
            "[tf_adapter/common/adapter_logger.cc:27] [TF_ADAPTER] [npu_attrs.cc:812] "
            "session options:"
        )
        body = (
            ["{"]
            + [f'  "ge.option_{i}": "{rng.getrandbits(24)}",' for i in range(rng.randrange(3, 9))]
            + ["}"]
        )
        return [head, *body]
    head = _header("ERROR", "GE", pid, pname, moment) + (
        f"[ge_executor.cc:{rng.randrange(100, 900)}]{pid} ExecModel: ErrorNo: 1343225857 "
        "execute model failed, TraceBack follows"
    )
    return [
        head,
        "        TraceBack (most recent call last):",
        "        rtStreamSynchronize execute failed, reason=[aicore exception]",
    ]


def write_tree(
    root: Path, lines: int, seed: int = 7, processes: int = 16, hours: float | None = None
) -> int:
    """Write about `lines` lines under `root`; returns the number of bytes written. With
    `hours`, each file's lines are spread over that many hours (else a busy burst: about 0.2 ms
    between lines)."""
    rng = random.Random(seed)
    weights = [weight for weight, *_ in _SINGLE_LINE_TEMPLATES]
    per_process = max(1, lines // processes)
    start = datetime(2025, 5, 8, 9, 56, 0)
    mean_gap_us = 210 if hours is None else int(hours * 3600e6 / per_process)
    written = 0
    for index in range(processes):
        pid = 150000 + index * 37
        pname = "python3" if index % 4 else "python3.10"
        channel = "debug" if index % 3 else "run"
        if index % 5 == 4:
            folder = root / channel / f"device-{index % 8}"
            name = f"device-{pid}_{start:%Y%m%d%H%M%S}{index:03d}.log"
        else:
            folder = root / channel / "plog"
            name = f"plog-{pid}_{start:%Y%m%d%H%M%S}{index:03d}.log"
        folder.mkdir(parents=True, exist_ok=True)
        moment = start + timedelta(seconds=index)
        out: list[str] = []
        count = 0
        while count < per_process:
            moment += timedelta(microseconds=rng.randrange(mean_gap_us // 10, 2 * mean_gap_us))
            if rng.random() < 0.002:
                block = _multi_line(rng, pid, pname, moment)
                out.extend(block)
                count += len(block)
                continue
            choice = rng.choices(_MODULE_SHORTCUTS, weights)[0]
            _, levels, module, template = _SINGLE_LINE_TEMPLATES[choice]
            level = rng.choice(levels.split())
            tid = pid + rng.randrange(0, 40)
            body = template.format(
                line=rng.randrange(20, 3000),
                tid=tid,
                pid=pid,
                n=rng.randrange(0, 4096),
                m=rng.randrange(0, 10_000_000),
                dev=index % 8,
            )
            out.append(_header(level, module, pid, pname, moment) + body)
            count += 1
        text = "\n".join(out) + "\n"
        (folder / name).write_text(text, encoding="utf-8")
        written += len(text.encode())
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hours", type=float, help="spread each file over this many hours")
    args = parser.parse_args()
    size = write_tree(args.root, args.lines, args.seed, hours=args.hours)
    print(f"wrote {size / 1e6:.1f} MB under {args.root}")


if __name__ == "__main__":
    main()
