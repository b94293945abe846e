"""Reading `key[value]` fields out of HCCL line text.

HCCL prints almost every value as `name[value]` (formats/hccl.md §0). FaultDiag splits on
`name[` and reads to `]`, which also finds `rank[` inside `localUserrank[`; here a name must not
follow a letter, so `rank` and `userRank` stay apart.
"""

from __future__ import annotations

import re
from string import ascii_letters

from npuwatch.bounded_numbers import finite_float, fitting_int

_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
_IP = rf"(?:{_IPV4}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+)"
IP = re.compile(_IP)
_SECONDS = re.compile(r"\s*(-?\d+(?:\.\d+)?)")
_LETTERS = frozenset(ascii_letters)


def field(text: str, name: str) -> str | None:
    """The value of the first `name[...]` not preceded by a letter, stripped; None when absent
    or not closed. (Found with `str.find`: a regular expression costs ten times more on HCCL's
    long lines.)"""
    key = name + "["
    at = text.find(key)
    while at >= 0:
        if at == 0 or text[at - 1] not in _LETTERS:
            start = at + len(key)
            end = text.find("]", start)
            return None if end < 0 else text[start:end].strip()
        at = text.find(key, at + 1)
    return None


def number(text: str, name: str) -> int | None:
    """`name[...]` as a whole number (decimal, or hex with 0x); None when absent or not one."""
    value = field(text, name)
    return to_int(value)


def to_int(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    # A number too large for 64 bits is no id (and would not fit a document's `long`).
    return fitting_int(value, 16) if value.lower().startswith("0x") else fitting_int(value)


def seconds(value: str | None) -> float | None:
    """A timeout value as HCCL prints it: `120`, `1836.00`, `120 s`, `120s`."""
    if value is None:
        return None
    match = _SECONDS.match(value)
    return None if match is None else finite_float(float(match[1]))


def address(value: str | None) -> str | None:
    """An IP from `10.0.0.1`, `10.0.0.1%eth0` (server with its NIC) or `10.0.0.1:60000`."""
    if not value:
        return None
    match = IP.match(value.strip())
    if match is None:
        return None
    found = match[0]
    return None if found in ("0.0.0.0", "") else found


def server_and_device(value: str | None) -> tuple[str | None, int | None]:
    """`<server id>/<physical device id>` (transport-init peers, heartbeat UIDs)."""
    if not value or "/" not in value:
        return None, None
    server, _, device = value.rpartition("/")
    return (server.strip() or None), to_int(device)
