"""Communicator-init and link-setup lines that are not timeouts: a process's own init failure
stated in one line, and the network steps (which NIC, listen, connect) the decisions of
formats/hccl-init-and-link.md §2 ask about.

A stated failure is HCCL saying what is wrong with this process (an environment variable out
of range, a port in use, a rank-table field, TLS or IP family differing between ranks): its
`stated` kind is the verdict, and the ranks it names (if any) are the root cause.
"""

from __future__ import annotations

import re
from typing import Any

from npuwatch.parsers.hccl.fields import address, field, number

Fields = dict[str, Any]

_ENV_VARIABLE = re.compile(r"(HCCL_[A-Z0-9_]+)")
_SERVER_RANK = re.compile(r"([0-9A-Fa-f.:]+)/(\d{1,6})")
_LISTEN_FAILED = re.compile(r"listen on ip\[([^\]]*)\] and specific port\[(\d+)\] fail")
_NIC = re.compile(r"find nic\[([^\]%]*)%([^\]]*)\]")


def stated_failure(text: str) -> Fields | None:
    """A process's own init failure, as HCCL states it (formats/hccl.md F8, A7; R3)."""
    if "HCCL_" in text and (
        ("is invalid" in text and ("except" in text or "Expected" in text))
        or ("parse HCCL_" in text and "failed" in text)
    ):
        variable = _ENV_VARIABLE.search(text)
        return _stated("hccl_env_invalid", variable[1] if variable else None)
    if ("HCCL_SOCKET_IFNAME" in text and "not found" in text) or (
        "get host ip fail by socket Ifname" in text
    ):
        return _stated("socket_ifname_not_found", field(text, "set ifname to"))
    listen = _LISTEN_FAILED.search(text)
    if listen is not None:
        kind = field(text, "socket type")
        place = {"0": "vNIC", "1": "device NIC", "2": "host NIC"}.get(kind or "", "NIC")
        return _stated("listen_port_busy", f"{place} {listen[1]} port {listen[2]}")
    if "superDeviceId" in text and ("already exist" in text or "same superDeviceId" in text):
        read = _stated("ranktable_invalid", "superDeviceId repeated")
        other = _after(text, "Another device info")
        if other is not None:
            read["remote_rank"] = number(other, "rankId")
        return read
    if "in the ranktable is inconsistent with the IP address" in text:
        return _stated("ranktable_invalid", "device IP differs from the NIC's")
    if "ip family" in text and ("is not same" in text or "not same as" in text):
        read = _stated("ip_family_mismatch", "IP family")
        read["remote_rank"] = number(text, "rank")
        return read
    if "TlsConsistency" in text or 'for config "tls" is invalid' in text:
        read = _stated("tls_mismatch", "TLS")
        listed = text.find("Inconsistent")
        named = _SERVER_RANK.findall(text[listed:]) if listed >= 0 else []
        if len(named) == 1:
            read["remote_server"] = address(named[0][0]) or named[0][0]
            read["remote_rank"] = int(named[0][1])
        return read
    if ("out of memory" in text and ("qp create" in text or "HCCL" in text)) or (
        "cclBuffer" in text and ("alloc" in text.lower() and "fail" in text)
    ):
        return _stated("buffer_alloc_failed", "communication memory")
    return None


def network_facts(text: str) -> list[tuple[str, Any, str | None]]:
    """The network steps of a line (HCCP or HCCL, any level): `listen` (`ip:port`), `connect`
    (the remote IP, with the socket tag as communicator: it contains the identifier) and
    `host_nic` (the interface HCCL chose), with `host_ip`."""
    said: list[tuple[str, Any, str | None]] = []
    if "ocket_listen_start" in text or "SocketListenStart" in text:
        ip = address(field(text, "localIp") or field(text, "local_ip"))
        port = field(text, "port")
        if ip is not None:
            said.append(("listen", f"{ip}:{port}" if port else ip, None))
    elif "Listen on ip[" in text:
        ip = address(field(text, "Listen on ip"))
        port = field(text, "port")
        if ip is not None:
            said.append(("listen", f"{ip}:{port}" if port else ip, None))
    elif "ocket_batch_connect" in text or "SocketBatchConnect" in text:
        remote = address(field(text, "remoteIp") or field(text, "remote_ip"))
        if remote is not None:
            said.append(("connect", remote, field(text, "tag")))
    elif "find nic[" in text:
        nic = _NIC.search(text)
        if nic is not None:
            said.append(("host_nic", nic[2], None))
            ip = address(nic[1])
            if ip is not None:
                said.append(("host_ip", ip, None))
    elif "get host ip success" in text:
        name = field(text, "name")
        if name:
            said.append(("host_nic", name, None))
    return said


NETWORK_WORDS = ("ocket", "nic[", "ip success", "Listen on ip[")
"""Keywords at least one of which every line `mentions_network` accepts holds."""


def mentions_network(text: str) -> bool:
    """Whether a line may be a network step: three `in` tests for most lines (every HCCL INFO
    line of a busy plog passes here)."""
    if "ocket" in text:  # ra_socket_listen_start, RaSocketListenStart, …batch_connect, …Connect
        return "isten_start" in text or "istenStart" in text or "atch" in text
    return "nic[" in text or "ip success" in text or "Listen on ip[" in text


def _stated(kind: str, detail: str | None) -> Fields:
    return {"kind": "init_failure", "stated": kind, "detail": detail}


def _after(text: str, key: str) -> str | None:
    index = text.find(key)
    return None if index < 0 else text[index:]
