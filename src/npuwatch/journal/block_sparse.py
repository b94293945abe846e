"""A block's sparse columns: the flags and the error codes of the few records that have any.

Format 2 stored them as one JSON document, `[[[position, flags], …], [[position, [code, …]],
…]]`. Parsing it was most of the cost of a block's columns once format 3 let `grep` skip the
text (0.10 of 0.11 s for the 73 blocks of bench/anchors.py's tree): format 3 stores the
positions and the flags as arrays of 32-bit integers, and only the codes' lists as JSON.

Format 3's section: _COUNTS (records with flags, records with codes), the flags' positions,
their flags, the codes' positions (each count × uint32), then the JSON list of the codes' lists.
"""

from __future__ import annotations

import json
import struct
from array import array
from typing import Any

_COUNTS = struct.Struct("<II")

Sparse = tuple[dict[int, int], dict[int, list[str]]]
"""Flags by position, codes by position."""


def encode_sparse(version: int, flags: list[list[int]], codes: list[list[Any]]) -> bytes:
    """The section of `flags` ([position, flags] pairs) and `codes` ([position, codes])."""
    if version == 2:
        return json.dumps([flags, codes]).encode()
    flag_positions = array("I", [position for position, _ in flags])
    flag_values = array("I", [value for _, value in flags])
    code_positions = array("I", [position for position, _ in codes])
    return b"".join(
        [
            _COUNTS.pack(len(flags), len(codes)),
            flag_positions.tobytes(),
            flag_values.tobytes(),
            code_positions.tobytes(),
            json.dumps([record_codes for _, record_codes in codes]).encode(),
        ]
    )


def decode_sparse(version: int, section: bytes) -> Sparse:
    """The flags and codes of a section; ValueError, TypeError or struct.error when damaged."""
    if version == 2:
        sparse_flags, sparse_codes = json.loads(section)
        return dict(sparse_flags), dict(sparse_codes)
    flag_count, code_count = _COUNTS.unpack_from(section)
    at = _COUNTS.size
    columns = []
    for count in (flag_count, flag_count, code_count):
        values = array("I")
        if len(section) < at + 4 * count:
            raise ValueError("the sparse columns are shorter than their counts say")
        values.frombytes(section[at : at + 4 * count])
        columns.append(values)
        at += 4 * count
    flag_positions, flag_values, code_positions = columns
    code_lists = json.loads(section[at:])
    if not isinstance(code_lists, list) or len(code_lists) != code_count:
        raise ValueError("the codes do not match their positions")
    return (
        dict(zip(flag_positions, flag_values, strict=True)),
        dict(zip(code_positions, code_lists, strict=True)),
    )
