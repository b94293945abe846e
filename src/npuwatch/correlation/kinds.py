"""The kinds of fault the correlator decides: what each means, what to check first, and the
MindCluster FaultDiag code of the kinds FaultDiag also has (CORRELATION.md §1.7).

A verdict is named by its kind; FaultDiag's code is kept beside it for people who know
FaultDiag's numbers, and is None for the kinds FaultDiag does not decide: a process's own init
failure, communicator init, link setup, and settings that differ across the cluster
(formats/hccl-init-and-link.md §2).
"""

from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    name: str
    faultdiag_code: int | None
    confidence: float
    """The confidence of a verdict of this kind before its notes lower it."""
    meaning: str
    check_first: str


_ENTRY_LOG = (
    "set HCCL_ENTRY_LOG_ENABLE=1 on both ranks and compare their Entry- lines since the "
    "communicator was created (which op did each launch?)"
)

_KINDS: tuple[Kind, ...] = (
    # -- FaultDiag's decisions -----------------------------------------------------------------
    Kind(
        "errors_without_timeout", 101, 0.3,
        "errors on several devices and no collective timeout anywhere",
        "read the first error of each device listed; none waited for another",
    ),
    Kind(
        "link_setup_timeout_spread", 107, 0.6,
        "every rank timed out setting up links, and the reports are spread over more than "
        "HCCL_CONNECT_TIMEOUT: the last rank to report started late",
        "why the last rank reached link setup late: its start, its data loading, its host",
    ),
    Kind(
        "link_setup_wait", 108, 0.8,
        "ranks timed out setting up links, waiting for one another",
        "the end of the waiting chain: is its process alive, its NIC up (hccn_tool -i N -link "
        "-g), its port reachable",
    ),
    Kind(
        "aicpu_notify_wait", 109, 0.7,
        "AI-CPU notify waits, in a chain",
        "the end of the chain: its device log and its host process",
    ),
    Kind(
        "exec_timeout_spread", 110, 0.6,
        "every rank timed out in a collective, the reports spread over more than "
        "HCCL_EXEC_TIMEOUT: the last rank arrived late",
        "what the last rank did before the collective (slow compute, a late launch on its host)",
    ),
    Kind(
        "exec_timeout_unlocated", 111, 0.3,
        "every rank timed out in a collective within HCCL_EXEC_TIMEOUT of each other and the "
        "waits do not point at one rank",
        "diff the Entry- sequences of the ranks (HCCL_ENTRY_LOG_ENABLE=1) for a diverging call",
    ),
    Kind(
        "exec_timeout_missing_rank", 112, 0.85,
        "ranks timed out in a collective waiting for ranks that never reported it",
        "the silent ranks: a hang (py-spy dump, npu-smi info), a crash (dmesg, core files), or "
        "logs that were not collected",
    ),
    Kind(
        "first_error_not_timeout", 113, 0.85,
        "the first failure was not a timeout; the ranks that timed out were waiting for it",
        "the first error of the root cause and the lines above it",
    ),
    Kind(
        "rdma_retransmission", 116, 0.9,
        "RDMA retransmissions exceeded (ERROR CQE) on a link",
        "the link and the NIC named: hccn_tool -i N -link -g, -stat -g, optical module, "
        "switch port",
    ),
    Kind(
        "init_timeout_spread", 117, 0.6,
        "every rank timed out joining the communicator, the reports spread over more than "
        "HCCL_CONNECT_TIMEOUT: the last rank started late",
        "why the last rank started late",
    ),
    Kind(
        "init_root_unreachable", 118, 0.7,
        "ranks timed out joining the communicator: the root rank's host did not answer",
        "the root rank's process and host network (firewall, port, backlog, open files)",
    ),
    Kind(
        "init_missing_rank", 119, 0.75,
        "some ranks timed out joining the communicator while others never reported",
        "the ranks that did not report: did they start, did they reach communicator init",
    ),
    Kind(
        "tls_mismatch", 120, 0.7,
        "TLS is switched on for some devices and off for others",
        "hccn_tool -i N -tls -g on every device; make the setting the same "
        "(hccn_tool -i N -tls -s enable 1 on every device)",
    ),
    Kind(
        "init_never_connected", 121, 0.75,
        "ranks never connected to the root and left no logs",
        "whether those ranks started at all (scheduler, container, node)",
    ),
    Kind(
        "exec_timeout_op_index", 122, 0.7,
        "ranks timed out at different steps of the same collective: the ranks at the "
        "earliest step fell behind",
        "what the ranks at the smallest op index did before it",
    ),
    Kind(
        "exec_timeout_op_tag", 123, 0.7,
        "ranks timed out in different collectives: the call order diverged",
        "the code path of the ranks at the rarest collective (a conditional collective call)",
    ),
    Kind(
        "notify_deadlock", 124, 0.5,
        "the waits form a cycle (a deadlock in the operator order)",
        "diff the Entry- sequences of the ranks in the cycle",
    ),
    Kind(
        "notify_own_stream", 125, 0.8,
        "a rank waited on its own secondary stream while the others waited for it",
        "the rank's own compute before the collective (an operator that never finished)",
    ),
    Kind(
        "hccl_cluster_exception", 126, 0.85,
        "HCCL's own heartbeat named the device",
        "the device named: its process (exited?), its network, npu-smi info",
    ),
    Kind(
        "transport_init_chain", 132, 0.8,
        "transport setup failed along a waiting chain",
        "the end of the chain: its process, its NIC and the port range",
    ),
    Kind(
        "transport_init_unlocated", 133, 0.3,
        "transport setup failed and no chain resolves",
        "the devices that did not print 'Transport init error'",
    ),
    # -- a process's own init failure, stated by HCCL in one line -------------------------------
    Kind(
        "hccl_env_invalid", None, 0.9,
        "an HCCL_* environment variable has a value HCCL does not accept",
        "the variable and the range in the evidence; fix it in the job's environment",
    ),
    Kind(
        "socket_ifname_not_found", None, 0.9,
        "HCCL_SOCKET_IFNAME names a network interface the host does not have",
        "ip addr on that host; set HCCL_SOCKET_IFNAME to an interface every host has",
    ),
    Kind(
        "listen_port_busy", None, 0.85,
        "HCCL could not listen on its port: another process holds it",
        "ss -ltnp | grep PORT on that host: a leftover process of an earlier job (kill it), or "
        "another job using the same HCCL_IF_BASE_PORT range",
    ),
    Kind(
        "ranktable_invalid", None, 0.85,
        "a field of the rank table is wrong or repeated",
        "the rank table's field named in the evidence against the device it describes "
        "(hccn_tool -i N -ip -g for device IPs)",
    ),
    Kind(
        "ip_family_mismatch", None, 0.85,
        "ranks of one communicator use different IP families (IPv4 and IPv6)",
        "the device IPs of the ranks named (hccn_tool -i N -ip -g); use one family everywhere",
    ),
    Kind(
        "buffer_alloc_failed", None, 0.8,
        "HCCL could not allocate its communication memory on the device",
        "npu-smi info for the device's memory; HCCL_BUFFSIZE and what else holds device memory",
    ),
    # -- communicator init: ranks that never reached the root -----------------------------------
    Kind(
        "init_nic_mismatch", None, 0.85,
        "ranks that never reached the root chose another host network interface than the root",
        "set the same HCCL_SOCKET_IFNAME (or HCCL_IF_IP) on every rank",
    ),
    Kind(
        "init_rank_not_called", None, 0.85,
        "ranks never called the communicator-init API, so the root waited for them in vain",
        "why those ranks skipped communicator creation: not started, died before it, or a "
        "different code path (their last lines before the root timed out)",
    ),
    Kind(
        "init_root_not_listening", None, 0.75,
        "the root never listened on its port while the ranks tried to join",
        "the root host: a stale HCCP process, or the port taken (ss -ltnp | grep PORT)",
    ),
    Kind(
        "init_no_connect", None, 0.7,
        "ranks called communicator init but never sent their socket request to the root",
        "what those ranks did after their init entry (their next lines, a hang: py-spy dump)",
    ),
    Kind(
        "init_root_exited", None, 0.75,
        "ranks connected after the root's process had stopped logging: it exited early",
        "why the root's process exited (its last lines, dmesg, the scheduler)",
    ),
    Kind(
        "init_window_missed", None, 0.7,
        "ranks tried to join after the root had given up waiting: their init calls were too "
        "far apart",
        "raise HCCL_CONNECT_TIMEOUT, else find why the ranks start so far apart",
    ),
    Kind(
        "init_large_cluster", None, 0.5,
        "ranks of a communicator of over 1,000 ranks never reached the root: its listen "
        "backlog overflowed",
        "net.core.somaxconn and net.ipv4.tcp_max_syn_backlog = 65535 on every host",
    ),
    Kind(
        "init_rank_not_connected", None, 0.6,
        "ranks called communicator init and tried to reach the root, but never did",
        "the network path from those ranks to the root: hccn_tool -i N -link -g, "
        "telnet ROOT_IP PORT",
    ),
    # -- link setup between two ranks ----------------------------------------------------------
    Kind(
        "link_server_not_listening", None, 0.75,
        "the server of the link never listened for it",
        "the server rank: why its link setup did not start (its process, its last lines)",
    ),
    Kind(
        "link_client_not_connected", None, 0.7,
        "the client of the link never connected to the server",
        _ENTRY_LOG,
    ),
    Kind(
        "link_server_exited", None, 0.75,
        "the server of the link had stopped logging before the client connected: it exited",
        "why the server's process exited (its last lines, dmesg, the scheduler)",
    ),
    Kind(
        "link_server_no_error", None, 0.65,
        "the server of the link reported no error at all: it never reached the op",
        _ENTRY_LOG,
    ),
    Kind(
        "link_client_exited", None, 0.75,
        "the client of the link had stopped logging before the server waited for it: it exited",
        "why the client's process exited (its last lines, dmesg, the scheduler)",
    ),
    Kind(
        "link_client_late", None, 0.7,
        "the client connected only after the server had given up: it launched the op late",
        _ENTRY_LOG,
    ),
    Kind(
        "link_network", None, 0.5,
        "the link between two devices failed with neither end shown at fault (both tried and "
        "never met, or an error CQE seen from one end): the network between them",
        "hccn_tool -i N -ping -g address PEER_IP from one end (hccs_ping on one host), "
        "hccn_tool -i N -link -g on both",
    ),
    Kind(
        "exec_param_mismatch", None, 0.75,
        "ranks timed out in the same collective called with different parameters (count or "
        "data type)",
        "the call of the collective on the ranks named: the same count and dtype on every rank",
    ),
    Kind(
        "weak_timeout_unlocated", None, 0.2,
        "only socket receive timeouts, which name no peer: nobody can be named from them",
        "the processes' other errors; collect the logs of every rank of the communicator",
    ),
    # -- the cluster's settings ----------------------------------------------------------------
    Kind(
        "setting_mismatch", None, 0.7,
        "a setting differs between the processes of the job",
        "make the setting the same on every host (the environment of the launcher)",
    ),
)  # fmt: skip

KINDS: dict[str, Kind] = {kind.name: kind for kind in _KINDS}
KIND_OF_CODE: dict[int, str] = {
    kind.faultdiag_code: kind.name for kind in _KINDS if kind.faultdiag_code is not None
}
