"""Error codes inside a record's text: six-character CANN codes, numeric ACL/runtime codes and
torch_npu `ERRxxxxx` codes (formats doc §4).

The six-character codes are found with patterns that start with a literal letter, which Python's
regex engine scans for at C speed; a boundary check on each hit keeps `0xE12345`-like hex out.
"""

from __future__ import annotations

import re

_E_CODE = re.compile(r"E[0-9A-Z][0-9]{4}")
_W_CODE = re.compile(r"W[0-9A-Z][0-9]{4}")
# Numeric ACL/runtime codes: 1xxxxx parameter, 2xxxxx resource, 5xxxxx internal/device, written
# after a keyword: `error code is 507035`, `ErrCode=507015`, `runtime result = 507014`,
# `errorCode = 507033`, `code=507046`, `ret[107001]`, `retcode: 507011`, `retCode is 107017`.
_RUNTIME_CODE = re.compile(
    r"(?:[Cc]ode|result|ret|Ret|errno|rror)(?: is|:| =|=|\[| )? ?\(?([125][0-9]{5})(?![0-9])"
)
_FRAMEWORK_CODE = re.compile(r"ERR[0-9]{5}")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def find_error_codes(text: str) -> list[str]:
    """Every six-character CANN code in `text`, in order of appearance, without repeats."""
    if _E_CODE.search(text) is None and _W_CODE.search(text) is None:
        return []
    found: list[tuple[int, str]] = []
    for pattern in (_E_CODE, _W_CODE):
        for match in pattern.finditer(text):
            start, end = match.span()
            if start and text[start - 1] in _WORD_CHARS:
                continue
            if end < len(text) and text[end] in _WORD_CHARS:
                continue
            found.append((start, match[0]))
    if not found:
        return []
    if len(found) > 1:
        found.sort()
    codes: list[str] = []
    for _, code in found:
        if code not in codes:
            codes.append(code)
    return codes


def find_runtime_codes(text: str) -> list[int]:
    """Numeric ACL/runtime codes such as 507035 or 107020, in order, without repeats."""
    codes: list[int] = []
    for match in _RUNTIME_CODE.finditer(text):
        code = int(match[1])
        if code not in codes:
            codes.append(code)
    return codes


def find_framework_code(text: str) -> str | None:
    """The first torch_npu code (`ERR02200`) in `text`."""
    match = _FRAMEWORK_CODE.search(text)
    return match[0] if match else None
