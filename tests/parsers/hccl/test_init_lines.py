"""HCCL's one-line init failures and the network steps of init, read from lines written from
formats/hccl.md (F8, A7) and formats/hccl-init-and-link.md §1.1 (R2-R4, A3), in the spellings
of old and new releases."""

from __future__ import annotations

import pytest

from npuwatch.parsers.hccl.init_lines import mentions_network, network_facts, stated_failure


@pytest.mark.parametrize(
    ("line", "kind", "rank"),
    [
        (
            "[Parse][rdmaServerLevel]HCCL_RDMA_SL[99] is invalid. except: [0, 7]",
            "hccl_env_invalid",
            None,
        ),
        (
            "[InitGroupStage][EnvConfig]errNo[0x0000000005000001] In init env variable param, parse HCCL_RDMA_TC failed. errno[1]",
            "hccl_env_invalid",
            None,
        ),
        (
            "[FindLocalHostIP]set ifname to [eth9] by HCCL_SOCKET_IFNAME,but not found in the environment",
            "socket_ifname_not_found",
            None,
        ),
        (
            "[HcclSocket][Listen] socket type[1], listen on ip[10.1.2.3] and specific port[16666] fail. Please check the port status",
            "listen_port_busy",
            None,
        ),
        (
            "[InitGroupStage][RanktableCheck]devices have same superDeviceId[0x2000000] in superPod[p1]. Current device info: serverId[10.0.0.5], rankId[2], group[g]. Another device info: rankId[5].",
            "ranktable_invalid",
            5,
        ),
        (
            "ra_rdev_init_check_ip(480):[check][ip]fail,ret(129) the IP address(10.9.0.1) in the ranktable is inconsistent with the IP address (10.9.0.2) of the network adapter",
            "ranktable_invalid",
            None,
        ),
        (
            "[InitGroupStage][RanktableCheck]rank[3] device ip family[10] is not same as others[2].",
            "ip_family_mismatch",
            3,
        ),
        (
            "[Verify][TlsConsistency]Some ranks tlsStatus of inconsistent ranks are [Enable].Inconsistent serverId/rankId:[10.0.0.7/4];",
            "tls_mismatch",
            4,
        ),
        (
            "[Recv][RaSocket]errNo[0x0000000005000013] ra qp create fail, reason: out of memory. qpInfo:[1]",
            "buffer_alloc_failed",
            None,
        ),
    ],
)
def test_a_stated_init_failure_names_its_kind_and_the_rank_it_blames(
    line: str, kind: str, rank: int | None
) -> None:
    read = stated_failure(line)
    assert read is not None
    assert read["kind"] == "init_failure"
    assert read["stated"] == kind
    assert read.get("remote_rank") == rank


@pytest.mark.parametrize(
    "line",
    [
        "topo exchange server get socket timeout! timeout[600 s]",
        "Wait timeout for sockets recv, data[0x1], size[4 Byte], recvSize[0 Byte]",
        "HCCL_CONNECT_TIMEOUT set by environment to [300]s",
        "[Get][Connection] tag[10.0.0.1%eth0_60000_0_1]",
    ],
)
def test_timeouts_and_settings_are_not_stated_failures(line: str) -> None:
    assert stated_failure(line) is None


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "ra_socket_listen_start(820) : Input parameters: [0]th, phy_id[0], local_ip[10.0.0.1], port[60000]",
            [("listen", "10.0.0.1:60000", None)],
        ),
        (
            "RaSocketListenStart : Input parameters: [0]th, phyId[1], localIp[10.0.0.1], port[60001]",
            [("listen", "10.0.0.1:60001", None)],
        ),
        (
            "ra_socket_batch_connect(770) : Input parameters: [0]th, phy_id[0], local_ip[10.0.0.2], remote_ip[10.0.0.1], tag[10.0.0.1%eth0_60000_0_1_640000]",
            [("connect", "10.0.0.1", "10.0.0.1%eth0_60000_0_1_640000")],
        ),
        (
            "RaSocketBatchConnect : Input parameters: [0]th, phyId[0], localIp[10.0.0.2], remoteIp[10.0.0.1], port[60000], tag[topo_detect_default_tag_X_60000], cnt[1]",
            [("connect", "10.0.0.1", "topo_detect_default_tag_X_60000")],
        ),
        (
            "nic class[normal]: find nic[10.0.0.2%eth3] success.",
            [("host_nic", "eth3", None), ("host_ip", "10.0.0.2", None)],
        ),
        ("get host ip success. name[bond0] ip[10.0.0.2]", [("host_nic", "bond0", None)]),
    ],
)
def test_network_steps_are_read_in_old_and_new_spellings(
    line: str, said: list[tuple[str, str, str | None]]
) -> None:
    assert mentions_network(line)
    assert network_facts(line) == said
