"""The HCCL extractor: topology facts and collective-failure events from records."""

from __future__ import annotations

from pathlib import Path

from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact
from npuwatch.parsers.stream import parse_bytes
from tests.conftest import REAL_LOGS, utc_clock


def line(
    level: str, pid: int, time: str, body: str, tid: int | None = None, module: str = "HCCL"
) -> str:
    return f"[{level}] {module}({pid},python3):2025-12-10-{time} [x.cc:1] [{tid or pid}]{body}"


def extract(text: str, pid: int = 100, host: str = "host-a", cap: int = 64) -> list[Extracted]:
    extractor = CollectiveExtractor(events_per_process=cap)
    path = f"{host}/ascend/log/debug/plog/plog-{pid}_20251210195327204.log"
    records = parse_bytes(text.encode(), utc_clock(), path=path, host=host)
    return [*extractor.feed(records, 1), *extractor.finish()]


def facts(items: list[Extracted]) -> dict[tuple[str, str | None], object]:
    return {
        (item.name, item.communicator): item.value
        for item in items
        if isinstance(item, Fact) and item.name != "heard"
    }


def events(items: list[Extracted], kind: str | None = None) -> list[CollectiveEvent]:
    return [i for i in items if isinstance(i, CollectiveEvent) and (kind is None or i.kind == kind)]


def test_the_key_info_pair_gives_rank_size_devices_and_addresses_of_one_communicator() -> None:
    items = extract(
        "\n".join(
            [
                line(
                    "INFO",
                    100,
                    "19:53:28.131.350",
                    "[Communicator Key Info]identifier[10.0.0.11%eth0_60000_0_1765367607599032] rankSize[8] serverNum[1] moduleNum[1] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:28.131.357",
                    "[LocalRank Key Info]userRank[6] hostIp[10.0.0.11] devicePhyId[6] server[10.0.0.11] deviceIp[192.168.1.6] superPodId[0] useSuperPodMode[0] isStandardCard[0]",
                ),
            ]
        )
    )
    world = "10.0.0.11%eth0_60000_0_1765367607599032"
    said = facts(items)
    assert said[("rank", world)] == 6
    assert said[("rank_count", world)] == 8
    assert said[("phy_device", None)] == 6
    assert said[("device_ip", None)] == "192.168.1.6"
    assert said[("host_ip", None)] == "10.0.0.11"


def test_setup_agent_reads_the_server_without_its_nic_and_the_root_info_entry_not_as_this_host() -> (
    None
):
    items = extract(
        "\n".join(
            [
                line(
                    "INFO",
                    100,
                    "19:53:27.100.000",
                    "Entry-HcclCommInitRootInfoInner:ranks[16], rank[3], rootinfo: host ip[10.0.0.99] port[60000] nicDeploy[1] identifier[world], deviceLogicId[3]",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:27.200.000",
                    "[HCCL_TRACE][Flat]SetupAgent rankNum[16], rank[3], rootInfo identifier[world], server[10.0.0.12%eth0], serverPort[60000]deviceType[4], logicDevId[3], phydevId[11], deviceIp[192.168.1.11]",
                ),
            ]
        )
    )
    said = facts(items)
    assert said[("server_ip", None)] == "10.0.0.12"
    assert said[("phy_device", None)] == 11
    assert said[("logic_device", None)] == 3
    assert said[("rank", "world")] == 3
    assert said[("rank_count", "world")] == 16
    assert "10.0.0.99" not in said.values()


def test_a_sub_communicator_and_the_root_rank_marker_are_facts_of_their_own_communicator() -> None:
    items = extract(
        "\n".join(
            [
                line(
                    "INFO",
                    100,
                    "19:53:27.100.000",
                    "hcclCommInitInfo:commId[x], rank[1], totalRanks[4], serverId[10.0.0.11], deviceType[4],logicDevId[1], identifier[group_name_tp0]",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:27.200.000",
                    "[HCCL_TRACE]HcclGetRootInfo success, take time [120]us, identifier[group_name_tp0]",
                ),
            ]
        )
    )
    said = facts(items)
    assert said[("rank", "group_name_tp0")] == 1
    assert said[("rank_count", "group_name_tp0")] == 4
    assert said[("root", "group_name_tp0")] is True


def test_timeouts_are_read_as_logged_including_two_decimals() -> None:
    items = extract(
        "\n".join(
            [
                line(
                    "INFO",
                    100,
                    "19:53:27.100.000",
                    "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by environment to [600]s",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:27.100.100",
                    "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [300.00]s",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:27.100.200",
                    "[HCCL_ENV] HCCL_RDMA_TIMEOUT set by default to [20]",
                ),
                line(
                    "INFO",
                    100,
                    "19:53:27.100.300",
                    "[HCCL_ENV] HCCL_RDMA_RETRY_CNT set by default to [7]",
                ),
            ]
        )
    )
    said = facts(items)
    assert said[("connect_timeout_s", None)] == 600.0
    assert said[("exec_timeout_s", None)] == 300.0
    assert said[("rdma_timeout", None)] == 20.0
    assert said[("rdma_retry_count", None)] == 7.0


def _notify_block(pid: int, tid: int, remote: str, index: int, second: int) -> list[str]:
    prefix = "[TaskExecStage][Timeout][HOST_TS]Task run failed, "
    time = f"20:10:{second:02d}.000.000"
    return [
        line(
            "ERROR",
            pid,
            time,
            prefix
            + "base information is streamID:[3], taskID[88], taskType[Notify Wait], tag[AllReduce_world], AlgType(level 0-1-2):[fullmesh-ring-NHR].",
            tid,
        ),
        line(
            "ERROR",
            pid,
            time,
            prefix
            + f"para information is notify id:[0x0000000100000001], stage:[0], remote rank:[{remote}], tag[AllReduce_world].",
            tid,
        ),
        line(
            "ERROR",
            pid,
            time,
            prefix
            + "groupRank information is group:[world], user define information[-], rankSize[8], rankId[0], tag[AllReduce_world].",
            tid,
        ),
        line(
            "ERROR",
            pid,
            time,
            prefix
            + f"opData information is timeStamp:[2025-12-10-20:00:00.000.000], deviceId[0], index[{index}], count[1024], src[0x1], dst[0x2], dataType[fp16].",
            tid,
        ),
    ]


def test_notify_blocks_of_two_threads_interleaved_line_by_line_are_put_together_per_thread() -> (
    None
):
    one = _notify_block(100, 101, "4", 12, 1)
    two = _notify_block(100, 102, "local", 13, 1)
    text = "\n".join(line for pair in zip(one, two, strict=True) for line in pair)
    found = sorted(events(extract(text), "notify"), key=lambda e: e.op_index or 0)
    assert [(e.remote_rank, e.remote_local, e.op_index, e.communicator) for e in found] == [
        (4, False, 12, "world"),
        (None, True, 13, "world"),
    ]
    assert all(e.tag == "AllReduce_world" for e in found)


def test_a_block_cut_off_after_its_first_line_still_gives_an_event_without_a_peer() -> None:
    found = events(extract(_notify_block(100, 101, "4", 12, 1)[0]), "notify")
    assert len(found) == 1
    assert not found[0].names_peer
    assert found[0].tag == "AllReduce_world"


def test_a_link_error_row_names_the_destination_as_the_peer() -> None:
    row = "   |  192.168.1.5(5)   |  16666  |   192.168.1.0(0)   |  60001  | client | time out |   DISABLE  |"
    found = events(extract(line("ERROR", 100, "20:00:00.000.000", row)), "socket")
    assert [(e.remote_ip, e.remote_rank, e.link_role, e.link_status) for e in found] == [
        ("192.168.1.5", 5, "client", "time out")
    ]


def test_the_real_transport_init_and_cqe_lines_name_their_peers(real_logs: list[Path]) -> None:
    transport = next(
        text
        for text in (REAL_LOGS / "I007.log").read_text().splitlines()
        if "Transport init error" in text
    )
    cqe = next(
        text
        for text in (REAL_LOGS / "G007.log").read_text().splitlines()
        if "cqe error status" in text
    )
    found = events(extract(transport + "\n" + cqe, pid=80812))
    kinds = {event.kind: event for event in found}
    assert (kinds["transport_init"].remote_server, kinds["transport_init"].remote_device) == (
        "80.5.5.67",
        7,
    )
    assert kinds["transport_init"].remote_rank == 15
    assert kinds["cqe"].remote_ip == "127.11.0.2"


def test_the_connected_rank_list_of_the_root_is_read_as_numbers() -> None:
    text = "\n".join(
        [
            line(
                "ERROR",
                100,
                "20:00:00.000.000",
                "[InitGroupStage][RanktableDetect]topo exchange server get socket timeout! timeout[120 s]",
            ),
            line(
                "ERROR",
                100,
                "20:00:00.000.100",
                "[InitGroupStage][DisplayConnectedRank]total connected num is [3],line num is [1]",
            ),
            line(
                "ERROR",
                100,
                "20:00:00.000.200",
                "[InitGroupStage][DisplayConnectedRank]connected rankinfo[LINE 0]: [0000000000000000],[0000000000000002],[0000000000000010];",
            ),
        ]
    )
    found = events(extract(text), "rootinfo")
    assert len(found) == 1
    assert found[0].root_side
    assert found[0].connected_ranks == (0, 2, 10)


def test_every_hccl_env_line_is_a_fact_with_its_time_so_a_second_block_can_be_told() -> None:
    env = "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [120]s"
    text = "\n".join(
        [line("INFO", 100, "19:00:00.000.000", env), line("INFO", 100, "19:20:00.000.000", env)]
    )
    printed = [i for i in extract(text) if isinstance(i, Fact) and i.name == "hccl_env"]
    assert [(f.value, f.time_us is not None) for f in printed] == [
        ("HCCL_CONNECT_TIMEOUT", True),
        ("HCCL_CONNECT_TIMEOUT", True),
    ]
    assert printed[0].time_us != printed[1].time_us


def test_a_recovery_is_a_fact_and_the_same_failure_after_it_is_an_event_of_its_own() -> None:
    text = "\n".join(
        [
            line("ERROR", 100, "19:10:00.000.000", "[TaskExecStage]FFTS+ run failed"),
            line(
                "INFO",
                100,
                "19:11:00.000.000",
                "HcclCommResume:success, take time:[1200]us, comm[world]",
            ),
            line("ERROR", 100, "19:30:00.000.000", "[TaskExecStage]FFTS+ run failed"),
        ]
    )
    items = extract(text)
    assert [f.name for f in items if isinstance(f, Fact) and f.name == "resumed"] == ["resumed"]
    assert [e.count for e in events(items, "ffts")] == [1, 1]


def test_the_same_failure_repeated_is_kept_once_and_counted() -> None:
    text = "\n".join(
        line(
            "ERROR",
            100,
            f"20:00:{n:02d}.000.000",
            "connected p2p timeout, timeout:120 s. local logicDevid:0, remote physic id:3.",
        )
        for n in range(40)
    )
    found = events(extract(text), "p2p")
    assert [(e.remote_device, e.count) for e in found] == [(3, 40)]


def test_distinct_failures_beyond_the_cap_are_counted_not_kept() -> None:
    text = "\n".join(
        line(
            "ERROR",
            100,
            "20:00:00.000.000",
            f"connected p2p timeout, timeout:120 s. local logicDevid:0, remote physic id:{n}.",
        )
        for n in range(30)
    )
    items = extract(text, cap=10)
    assert len(events(items, "p2p")) == 10
    dropped = [i for i in items if isinstance(i, Fact) and i.name == "events_dropped"]
    assert [f.value for f in dropped] == [20]


def test_a_remote_rank_that_is_not_a_number_is_named_as_a_problem() -> None:
    text = "\n".join(_notify_block(100, 101, "abc", 12, 1))
    (found,) = events(extract(text), "notify")
    assert found.remote_rank is None
    assert found.problems == ["remote rank [abc] is not a rank"]


def test_the_first_error_of_any_module_is_an_event_and_only_the_first() -> None:
    text = "\n".join(
        [
            line("ERROR", 100, "20:00:00.000.000", "aicore exception", module="RUNTIME"),
            line("ERROR", 100, "20:00:01.000.000", "another", module="RUNTIME"),
        ]
    )
    found = events(extract(text), "error")
    assert [(e.module, e.evidence[0].line) for e in found] == [("RUNTIME", 1)]


def test_garbage_in_hccl_lines_never_raises() -> None:
    bodies = [
        "remote rank:[",
        "rankNum[x], rank[-1]",
        "Transport init error! remoteIpAddr[/]",
        "cqe error status[",
        "Cluster Exception Location[IP/ID]:[",
        "connected rankinfo",
        "[LocalRank Key Info]userRank[] devicePhyId[-3]",
        "\x00\xff" * 20,
        "]]][[[",
        "Task run failed, base information is",
        "NOTIFY WAIT remoteRank:4294967295",
    ]
    text = "\n".join(line("ERROR", 100, "20:00:00.000.000", body) for body in bodies)
    items = extract(text)
    assert any(isinstance(i, CollectiveEvent) for i in items)
