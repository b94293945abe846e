"""Identity lines: who a process is in which communicator, and the timeouts it runs with.

Each function reads one line's text (the record body) and returns what it says as
(fact name, value, communicator) triples; the extractor binds them to the process. Formats:
formats/hccl.md §1.2, H1 and H2 (HCOMM's exact format strings).
"""

from __future__ import annotations

import re

from npuwatch.parsers.hccl.fields import address, field, number, seconds, to_int

Said = tuple[str, str | int | float | bool, str | None]
"""(fact name, value, communicator or None)."""


IDENTITY_WORDS = (
    "Key Info]",
    "Entry-HcclCommInit",
    "SetupAgent",
    "hcclCommInitInfo",
    "HcclGetRootInfo",
    "Listen on ip",
    "SetupGroupMember",
    "init by file success",
    "sub commm identifier",
    "RootInfoDetect",
    "Env config",
    "timeOut[",
    "_TIMEOUT set by",
)
"""The keywords of `mentions_identity` (the batch selection searches for them all at once)."""


def mentions_identity(text: str) -> bool:
    """Whether a line can say something about identity or timeouts: one `in` test after the
    other, cheaper than a loop or a regex over HCCL's many other INFO lines. (`Entry-Hccl`
    alone would let in every operator's entry line of HCCL_ENTRY_LOG_ENABLE;
    `Entry-HcclGetRootInfo` needs no test of its own: `HcclGetRootInfo` finds it.)"""
    return (
        "Key Info]" in text
        or "Entry-HcclCommInit" in text
        or "SetupAgent" in text
        or "hcclCommInitInfo" in text
        or "HcclGetRootInfo" in text
        or "Listen on ip" in text
        or "SetupGroupMember" in text
        or "init by file success" in text
        or "sub commm identifier" in text
        or "RootInfoDetect" in text
        or "Env config" in text
        or "timeOut[" in text
        or "_TIMEOUT set by" in text
    )


_ENV = re.compile(
    r"(HCCL_CONNECT_TIMEOUT|HCCL_EXEC_TIMEOUT|HCCL_RDMA_TIMEOUT|HCCL_RDMA_RETRY_CNT|ExecTimeOut)"
    r"(?: set by [\w ]+? to \[([^\]]*)\]| is set(?:, timeOut| to default value| to timeOut)?"
    r"\s*\[([^\]]*)\])"
)
"""Timeouts in every wording seen (CORRELATION.md §5.3): `[HCCL_ENV] <VAR> set by environment
to [N]s` and the same without the tag, `environmental variable <VAR> is set, timeOut[N]`,
`ExecTimeOut is set to timeOut[N]` (EVENT); values may carry decimals (`[1836.00]`)."""
_ENV_NAMES = {
    "HCCL_CONNECT_TIMEOUT": "connect_timeout_s",
    "HCCL_EXEC_TIMEOUT": "exec_timeout_s",
    "HCCL_RDMA_TIMEOUT": "rdma_timeout",
    "HCCL_RDMA_RETRY_CNT": "rdma_retry_count",
    "ExecTimeOut": "exec_timeout_s",
}
_ENV_CONFIG = (
    ("linkTimeOut", "connect_timeout_s"),
    ("execTimeOut", "exec_timeout_s"),
    ("rdmaTimeOut", "rdma_timeout"),
    ("rdmaRetryCnt", "rdma_retry_count"),
)
_TLS_STATE = re.compile(r"\(\s*(\d)\s*\)")
HCCL_ENV_VARIABLE = re.compile(r"\[HCCL_ENV\](?:\[\w+\])?\s*(?:environmental variable )?(HCCL_\w+)")
"""`[HCCL_ENV] <VAR> …`: the block is printed once per process, so a variable seen twice in one
incarnation means the process initialised HCCL again (formats/hccl.md H4)."""


_SETTING = re.compile(r"(HCCL_[A-Z0-9_]+)\s+(?:set by [\w ]+? to|is set to|is)\s*\[([^\]]*)\]")
"""`[HCCL_ENV] <VAR> set by default|environment [variable] to [<v>]`, `… is [<v>]`, `<VAR> is
set to [<v>]` (formats/hccl.md H2; hccl-init-and-link.md §2.4)."""
_SETTING_EXPECTED_TO_DIFFER = frozenset({"HCCL_IF_IP"})
"""Settings that name the host itself, so differ between hosts by design."""


def setting(text: str) -> str | None:
    """`<VAR>=<value>` of a settings line, for comparing processes; None when not one."""
    match = _SETTING.search(text)
    if match is None or match[1] in _SETTING_EXPECTED_TO_DIFFER:
        return None
    value = match[2].strip()
    number = seconds(value) if value[:1].isdigit() else None
    if number is not None and value.replace(".", "", 1).isdigit():
        value = f"{number:g}"  # `1836.00` (set by environment) is `1836` (set by default)
    return f"{match[1]}={value}"


def timeouts(text: str) -> list[Said]:
    said: list[Said] = []
    match = _ENV.search(text)
    if match is not None:
        value = seconds(match[2] if match[2] is not None else match[3])
        if value is not None:
            said.append((_ENV_NAMES[match[1]], value, None))
    elif "Env config" in text:
        for key, name in _ENV_CONFIG:
            value = seconds(field(text, key))
            if value is not None:
                said.append((name, value, None))
    return said


def identity(text: str) -> list[Said]:
    """Device ids, addresses, ranks and communicators the line names."""
    said: list[Said] = []
    if "[Communicator Key Info]" in text:
        communicator = field(text, "identifier")
        _put(said, "rank_count", number(text, "rankSize"), communicator)
        return said
    if "[LocalRank Key Info]" in text:
        # the communicator is the one of the Key Info line just before (the extractor knows it)
        _put(said, "rank", number(text, "userRank"), None)
        _put(said, "rank_count", number(text, "rankSize"), None)
        _put(said, "host_ip", address(field(text, "hostIp")), None)
        _put(said, "phy_device", number(text, "devicePhyId"), None)
        _put(said, "server_ip", address(field(text, "server")), None)
        _put(said, "device_ip", address(field(text, "deviceIp")), None)
        return said
    if "Listen on ip" in text:
        ip = address(field(text, "ip"))
        _put(said, "phy_device", number(text, "devPhyId"), None)
        _put(said, "logic_device", number(text, "devLogicId"), None)
        if "[Vnic]" in text:
            _put(said, "vnic_ip", ip, None)
        elif "[Nic]" in text:
            _put(said, "device_ip", ip, None)
        return said
    if "HcclGetRootInfo success" in text or "HcclGetRootInfoV2 success" in text:
        _put(said, "root", True, field(text, "identifier"))
        return said
    if text.find("Entry-HcclGetRootInfo") >= 0:
        _put(said, "root", True, None)
        _put(said, "logic_device", number(text, "deviceLogicId"), None)
        return said
    communicator = (
        field(text, "identifier")
        or field(text, "sub commm identifier")
        or ("hccl_world_group" if "init by file success" in text else None)
    )
    rank_count = number(text, "ranks")
    for name in ("rankNum", "totalRanks", "nRanks"):
        if rank_count is None:
            rank_count = number(text, name)
    rank = number(text, "rank")
    if rank is None and (rank_count is not None or communicator is not None):
        rank = _first_number(text, "rankId")
    if rank_count is None and rank is None:
        return said
    if communicator is None and "success" in text and "Entry-" not in text:
        return said  # `…success, take time, rankNum[], rank[]` without a name: Entry said it
    _put(said, "rank", rank, communicator)
    _put(said, "rank_count", rank_count, communicator)
    _put(said, "logic_device", _first_number(text, "deviceLogicId", "logicDevId"), None)
    _put(said, "phy_device", _first_number(text, "phydevId", "devPhyId"), None)
    _put(said, "device_ip", address(field(text, "deviceIp")), None)
    server = field(text, "server") or field(text, "serverId")
    if "host ip[" not in text:  # `rootinfo: host ip[]` is the root's host, not this one's
        _put(said, "server_ip", address(server), None)
    if "init by file success" in text or "sub commm" in text:
        _put(said, "logic_device", number(text, "device"), None)
    return said


def tls_state(text: str) -> bool | None:
    """`TLS SWITCH (n)` in a device log: whether the device runs its links with TLS."""
    index = text.find("TLS SWITCH")
    if index < 0:
        return None
    match = _TLS_STATE.search(text, index)
    return None if match is None else match[1] != "0"


def _first_number(text: str, *names: str) -> int | None:
    for name in names:
        value = to_int(field(text, name))
        if value is not None:
            return value
    return None


def _put(said: list[Said], name: str, value: str | float | bool | None, comm: str | None) -> None:
    if value is not None and value != "":
        said.append((name, value, comm))
