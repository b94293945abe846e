"""Bytes of one line to text, without ever raising and without losing a byte.

CANN writes UTF-8, but pastes and Windows tools bring GBK, and device dumps bring raw bytes
(protobuf attributes, NUL padding). A line that is not UTF-8 is decoded as GBK when that is clean
text (reversible: encoding it back gives the same bytes), otherwise with backslash escapes for the
bytes that are not UTF-8 (`\\xff`), which keeps them readable and recoverable.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

GBK = "gbk"
ESCAPED = "utf-8-escaped"


def decode_line(raw: bytes) -> tuple[str, str | None]:
    """Decode one line; the second value names the fallback used, None for clean UTF-8."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode(GBK)
    except UnicodeDecodeError:
        pass
    else:
        if _CONTROL.search(text) is None:
            return text, GBK
    return raw.decode("utf-8", "backslashreplace"), ESCAPED


def cut_line(raw: bytes, limit: int) -> bytes:
    """Cut a line to at most `limit` bytes without splitting a UTF-8 character at the cut."""
    cut = raw[:limit]
    try:
        cut.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason == "unexpected end of data":
            return cut[: error.start]
    return cut
