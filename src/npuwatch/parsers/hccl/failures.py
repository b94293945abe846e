"""Failure lines: which collective failure a line reports, and the peer it names.

One function per family of formats/hccl.md H3 (and the looser wordings of older releases),
each returning the fields it read, or None when the line is not of that family. Blocks that
span several lines (the task-exception block, the root-info connected-rank list) are put
together by the extractor; these functions only read single lines.
"""

from __future__ import annotations

import re
from typing import Any

from npuwatch.bounded_numbers import finite_float
from npuwatch.parsers.hccl.fields import (
    IP,
    address,
    field,
    number,
    seconds,
    server_and_device,
    to_int,
)

Fields = dict[str, Any]

_LINK_ROW = re.compile(
    r"\|\s*(?P<dest>[0-9A-Fa-f.:]+)\((?P<dest_rank>\d{1,6})\)\s*\|(?:\s*\d*\s*\|)?"
    r"\s*(?P<src>[0-9A-Fa-f.:]+)\((?P<src_rank>\d{1,6})\)\s*\|(?:\s*\d*\s*\|)?"
    r"\s*(?P<role>[A-Za-z]+)\s*\|\s*(?P<status>[a-z ]+?)\s*\|"
)
"""A LINK_ERROR_INFO row, with its port columns (`dest | port | src | port | role | status`) or
without them, as older releases print it (`dest | src | role | status`, CORRELATION.md §5.1)."""
_REMOTE_RANK = re.compile(r"remote ?rank(?:id)?\s*:?\s*\[\s*(\w+)\s*\]", re.IGNORECASE)
_TIMEOUT = re.compile(r"timeout\s*[\[:]\s*(\d+(?:\.\d+)?)\s*s?", re.IGNORECASE)
_AGENT_ID = re.compile(r"\[(\d{1,16})\]")
_CQE = re.compile(
    r"cqe(?:\(\d+\))?[^|\[]{0,40}?status\s*[\[:]?\s*(0x[0-9a-fA-F]+|\d+)", re.IGNORECASE
)
"""`cqe error status[12]`, `cqe err status[12]` (HCCL), `error cqe status: 0x15`, `CQE status[12]`,
`dump_err_cqe(730) : CQ(0x3f) status 12` (ROCE and HCCP in device logs)."""
_ENDS = re.compile(
    r"(?P<side>Local|Peer) information:\s*server\s+(?P<server>[^\s,]+),\s*device ID\s+"
    r"(?P<device>\d{1,6}),\s*device IP\s+(?P<ip>[0-9A-Fa-f.:]+?)\.?(?:\s|$)"
)
"""The two ends of HCCL's error-code message for an error CQE (EI0013, `Execution_Error_ROCE_CQE`
or `Execution Error ROCE CQE`): `Local information: server S, device ID N, device IP A. Peer
information: …`, in plogs and quoted by the framework's watchdog."""
_PROBE_UIDS = re.compile(r"srcRank\[(?P<src>[^\]]*)\] connect destRank\[(?P<dst>[^\]]*)\] fail")
_PROBE_WORDS = re.compile(
    r"srcRank \(server (?P<src_server>[^,\s]+), device ID (?P<src_device>\d{1,6})\) fails to "
    r"connect to dstRank \(server (?P<dst_server>[^,\s]+), device ID (?P<dst_device>\d{1,6})\)"
)
"""HCCL's connection probe (formats/hccl-init-and-link.md §1.2, `CONNECT TIMEOUT DETECT RESULT`):
`TRANSPORT DETECT EVENT[1]:Rank[S/d]: srcRank[S1/d1] connect destRank[S2/d2] fail.`, or `This node
(server S, device ID d) detects that srcRank (server S1, device ID d1) fails to connect to dstRank
(server S2, device ID d2).`"""
_TASK_BASE = "Task run failed, base information is"
_REMOTE_IP = re.compile(r"remote\s+(" + IP.pattern + ")")
_LOCATION = re.compile(r"\]:\s*\[([^\]]*)\]")
_AICPU_REMOTE = re.compile(r"remoteRank\s*[:=]\s*(\d+)")
_HEARTBEAT = re.compile(
    r"rank \[[^\]]*\]:\s*(?:crimer )?rank \[(?P<crimer>[^\]]*)\]\s*status\[(?P<status>[^\]]*)\]"
    r"\s*by (?:informer )?rank \[(?P<informer>[^\]]*)\]"
)
_GROUP = re.compile(r"group\s*:\s*\[?([^\],\s]+)")
_NUMBER = re.compile(r"\s*(\d+)")


def task_base(text: str) -> Fields | None:
    """The first line of a task-exception block (H3.1 step 4; the FFTS+ op form has no
    taskType): opens a notify or FFTS+ event."""
    if _TASK_BASE not in text and not (
        "FFTS+ run failed, base infomation is" in text  # the older spelling, FFTS+ op form
        or "FFTS+ run failed, base information is" in text
    ):
        return None
    task_type = field(text, "taskType")
    kind = "notify" if task_type is None or "Notify" in task_type else "ffts"
    if task_type is None and "[Timeout]" not in text:
        kind = "ffts"
    # the op index can sit on the base line when no opData line follows (CORRELATION.md §5.2)
    return {
        "kind": kind,
        "tag": field(text, "tag"),
        "task_type": task_type,
        "op_index": number(text, "index"),
    }


def task_detail(text: str) -> Fields | None:
    """A later line of the block: para (remote rank), groupRank (group, rank count, own rank),
    opData (op index); also the one-line `notify wait timeout, remote rank[n]` wording."""
    read: Fields = {}
    lowered = text.lower()
    # the two searches ignore case, which makes them slow: they run only on lines that have
    # their words (no letter of these words has another case that lower() would miss)
    remote = _REMOTE_RANK.search(text) if "remote" in lowered else None
    if remote is not None:
        value = remote[1]
        if value.lower() == "local":
            read["remote_local"] = True
        elif value.isdigit() and (rank := to_int(value)) is not None:
            read["remote_rank"] = rank
        else:
            read["problem"] = f"remote rank [{value}] is not a rank"
    if "groupRank information is" in text or "rankSize[" in text:
        group = _bracket_after(text, "group:")
        if group:
            read["communicator"] = group
        size = number(text, "rankSize")
        if size is not None:
            read["rank_count"] = size
        own = field(text, "rankId")
        if own is not None:
            parts = own.split()
            own_rank = to_int(parts[0]) if parts and parts[0].isdigit() else None
            if own_rank is not None:
                read["own_rank"] = own_rank
            remote_rank = to_int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
            if remote_rank is not None and "remote_rank" not in read:
                read["remote_rank"] = remote_rank
        peer = number(text, "peerRankId")
        if peer is not None:
            read["remote_rank"] = peer
    if "opData information is" in text or "index[" in text:
        index = number(text, "index")
        if index is not None:
            read["op_index"] = index
    if "opData information is" in text:
        count, data_type = field(text, "count"), field(text, "dataType")
        if count is not None or data_type is not None:  # the op's parameters, to compare ranks
            read["detail"] = f"count {count or '?'}, {data_type or '?'}"
    if "tag[" in text and "opData" not in text:
        tag = field(text, "tag")
        if tag:
            read["tag"] = tag
    timeout = _TIMEOUT.search(text) if "meout" in lowered else None
    if timeout is not None and "timeStamp" not in text:
        timeout_s = finite_float(float(timeout[1]))
        if timeout_s is not None:
            read["timeout_s"] = timeout_s
    if "notify wait" in lowered:
        read["notify"] = True
    return read or None


def link_row(text: str) -> Fields | None:
    """A LINK_ERROR_INFO row of a socket that did not connect: `dest_ip(rank) | port |
    src_ip(rank) | port | role | status | …`; the peer is the destination."""
    match = _LINK_ROW.search(text)
    if match is None:
        return None
    status = match["status"].strip()
    return {
        "kind": "socket",
        "remote_ip": address(match["dest"]),
        "remote_rank": int(match["dest_rank"]),  # six digits at most: they fit
        "own_rank": int(match["src_rank"]),
        "own_ip": address(match["src"]),
        "link_role": match["role"].strip().lower(),
        "link_status": status,
    }


def socket_line(text: str) -> Fields | None:
    """Socket, p2p and other link-setup timeouts (H3.2)."""
    if "connected p2p timeout" in text or "check pcie connection failed" in text:
        device = _number_after(text, "remote physic id:")
        return {
            "kind": "p2p",
            "remote_device": device,
            "timeout_s": _seconds_after(text, "timeout:"),
        }
    if "Wait links establish completed failed" in text or "wait socket establish timeout" in text:
        role = next((r for r in ("client", "server") if f"role is {r}" in text), None)
        timeout = seconds(field(text, "timeout"))
        return {"kind": "socket", "link_role": role, "timeout_s": timeout}
    if "channel connect timeout" in text or "the connection failure" in text:
        return {"kind": "socket"}
    if (
        "Wait timeout for sockets recv" in text
        or "get rasocket timeout" in text
        or "recv fail" in text
    ):
        return {"kind": "normal", "timeout_s": seconds(field(text, "timeout"))}
    return None


def transport_init(text: str) -> Fields | None:
    if "Transport init error" not in text:
        return None
    server, device = server_and_device(field(text, "remoteIpAddr"))
    read: Fields = {
        "kind": "transport_init",
        "remote_server": address(server) or server,
        "remote_device": device,
        "remote_rank": number(text, "remoteRank"),
        "tag": field(text, "tag"),
    }
    if read["remote_rank"] is None and server is None:
        read["problem"] = "a Transport init error line names no remote end (cut short?)"
    return read


def probe(text: str) -> Fields | None:
    """A link HCCL's own connection probe found broken: who failed to connect to whom."""
    if "srcRank" not in text:
        return None
    found = _PROBE_UIDS.search(text)
    if found is not None:
        src_server, src_device = server_and_device(found["src"])
        dst_server, dst_device = server_and_device(found["dst"])
    else:
        words = _PROBE_WORDS.search(text)
        if words is None:
            return None
        src_server, src_device = words["src_server"], to_int(words["src_device"])
        dst_server, dst_device = words["dst_server"], to_int(words["dst_device"])
    if src_server is None or dst_server is None:
        return None
    return {
        "kind": "probe",
        "source_server": address(src_server) or src_server,
        "source_device": src_device,
        "remote_server": address(dst_server) or dst_server,
        "remote_device": dst_device,
    }


def cqe(text: str) -> Fields | None:
    """RDMA completion errors: retransmissions exceeded towards a peer (H3.4)."""
    lowered = text.lower()
    if "cqe" not in lowered:
        return None
    read: Fields = {"kind": "cqe"}
    if "Peer information:" in text:
        return _error_code_cqe(text, read)
    status = _CQE.search(text)
    if status is None and "find cqe error" not in text and "receive a cqe error" not in text:
        return None
    if status is not None:
        read["detail"] = f"CQE status {status[1]}"
    local = _braced(text, "localInfo{")
    if local is not None:  # this device's own address (§5.14)
        read["own_ip"] = address(field(local, "deviceIp"))
    remote = _braced(text, "remoteIP{")
    if remote is not None:
        read["remote_ip"] = address(field(remote, "deviceIp"))
        read["remote_server"] = address(field(remote, "server"))
        read["remote_device"] = number(remote, "deviceId")
    else:
        ip = (
            field(text, "remoteIP")
            or field(text, "remoteIpAddr")
            or _bracket_after(text, "remoteIP:")
            or _bracket_after(text, "ip:")
        )
        if ip is None:
            found = _REMOTE_IP.search(text)
            ip = found[1] if found else None
        read["remote_ip"] = address(ip)
    rank = number(text, "dstrank")
    if rank is None:
        rank = number(text, "remote rank")
    if rank is not None:
        read["remote_rank"] = rank
    communicator = field(text, "identifier")
    if communicator:
        read["communicator"] = communicator
    return read


def _error_code_cqe(text: str, read: Fields) -> Fields | None:
    """EI0013's two ends; it states no CQE status (so not that retransmissions ran out)."""
    ends = {found["side"]: found for found in _ENDS.finditer(text)}
    peer = ends.get("Peer")
    if peer is None:
        return None
    read["remote_ip"] = address(peer["ip"])
    read["remote_server"] = address(peer["server"]) or peer["server"]
    read["remote_device"] = to_int(peer["device"])
    local = ends.get("Local")
    if local is not None:
        read["own_ip"] = address(local["ip"])
    return read


def cluster_exception(text: str) -> Fields | None:
    """HCCL's own verdict (H3.4): `Cluster Exception Location[IP/ID]:[<server>/<device>]`."""
    index = text.find("Cluster Exception Location")
    if index < 0:
        return _heartbeat_abnormal(text)
    rest = text[index:]
    match = _LOCATION.search(rest)
    server, device = server_and_device(match[1] if match else None)
    if server is None:
        return None  # a cut line: it names no place
    return {
        "kind": "cluster_exception",
        "remote_server": address(server) or server,
        "remote_device": device,
        "exception_type": _bracket_after(rest, "ExceptionType:"),
        "discoverer": _bracket_after(rest, "Discoverer:"),
        "tag": field(text[:index], "tag"),  # a screen block quotes the task's tag before it
    }


def _heartbeat_abnormal(text: str) -> Fields | None:
    """`[HeartbeatAbnormal]local rank [<uid>]: crimer rank [<uid>] status[LOST|STUCK|…] by
    informer rank [<uid>]` (RUN), and the older `[HCCL_TRACE]rank [<uid>]: rank [<uid>]
    status[LOST] by rank [<uid>]`: the heartbeat's verdict as it changes, uid =
    `<serverId>/<devicePhyId>` (formats/hccl-init-and-link.md §1.3)."""
    match = _HEARTBEAT.search(text)
    if match is None:
        return None
    server, device = server_and_device(match["crimer"])
    if server is None:
        return None
    return {
        "kind": "cluster_exception",
        "remote_server": address(server) or server,
        "remote_device": device,
        "exception_type": match["status"],
        "discoverer": match["informer"],
    }


def rootinfo(text: str) -> Fields | None:
    """Root-info / topology-exchange timeouts at communicator init (H3.3)."""
    if "GetRankBasicInfo from" in text:
        # the root accepted this agent, which then failed to send its rank's basic info: the
        # agent id is its rank (a 16-digit, zero-padded number)
        return {
            "kind": "rootinfo",
            "root_side": True,
            "remote_rank": number(text, "agentId"),
            "timeout_s": seconds(field(text, "timeout")),
        }
    if "topo exchange server get socket timeout" in text:
        return {
            "kind": "rootinfo",
            "root_side": True,
            "timeout_s": seconds(field(text, "timeout")),
        }
    if "wait topoExchangeServer" in text:
        return {"kind": "rootinfo", "root_side": True}
    if (
        "topo exchange agent get socket timeout" in text
        or "receive from fdhandle failed" in text
        or "receive msg length from fdhandle failed" in text
        or "RootInfoDetect failed" in text
    ):
        return {"kind": "rootinfo", "timeout_s": seconds(field(text, "timeout"))}
    return None


def connected_ranks(text: str) -> tuple[int, ...] | None:
    """`connected rankinfo[LINE n]: [0000000000000002],[…];` (the typo `DispalyConnectionedRank`
    of old releases has the same list). Ids are zero-padded ranks: read as numbers, not text."""
    index = text.find("connected rankinfo")
    if index < 0:
        return None
    rest = text[index:]
    colon = rest.find(":")
    if colon < 0:
        return ()
    return tuple(int(found) for found in _AGENT_ID.findall(rest[colon + 1 :]))  # 16 digits fit


def aicpu_notify(text: str) -> Fields | None:
    """An AI-CPU notify wait in a device log: `NOTIFY WAIT … remoteRank:R` (the group comes on
    this line or the next one)."""
    if "NOTIFY WAIT" not in text and "type:Notify Wait" not in text:
        return None
    match = _AICPU_REMOTE.search(text)
    if match is None:
        return None
    rank = to_int(match[1])
    if rank is None or rank >= 0xFFFFFFFF:
        return None  # 4294967295: no peer
    read: Fields = {"kind": "aicpu_notify", "remote_rank": rank}
    group = group_of(text)
    if group:
        read["communicator"] = group
    return read


def group_of(text: str) -> str | None:
    match = _GROUP.search(text)
    return None if match is None else match[1]


def _bracket_after(text: str, key: str) -> str | None:
    index = text.find(key)
    if index < 0:
        return None
    rest = text[index + len(key) :].lstrip()
    if not rest.startswith("["):
        return None
    end = rest.find("]")
    return rest[1:end].strip() if end > 0 else None


def _braced(text: str, key: str) -> str | None:
    index = text.find(key)
    if index < 0:
        return None
    end = text.find("}", index)
    return text[index + len(key) : end if end > 0 else len(text)]


def _number_after(text: str, key: str) -> int | None:
    index = text.find(key)
    if index < 0:
        return None
    match = _NUMBER.match(text, index + len(key))
    return None if match is None else to_int(match[1])


def _seconds_after(text: str, key: str) -> float | None:
    index = text.find(key)
    return None if index < 0 else seconds(text[index + len(key) :])
