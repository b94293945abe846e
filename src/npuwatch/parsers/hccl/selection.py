"""Which records of a batch can say anything to the extractor.

Most of a plog is lines the extractor has nothing to learn from: other modules' INFO lines,
HCCL's DEBUG lines, and HCCL's INFO lines about operators, tasks and resources. The records
that can matter are picked here with `map` and `compress` over the batch: ERRORs of any module,
and HCCL's lines above DEBUG that mention one of the keywords of `may_matter`. Records of other
modules and HCCL's DEBUG lines never run a line of Python. HCCL's other lines are joined and
searched once for every keyword at once with RE2, whose automaton reads each character once
(Python's own expressions try each keyword at each character, and a chain of `in` tests a line
at a time costs about seven times more); only the lines it finds run `may_matter`, the exact
test.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, count, repeat
from operator import attrgetter, contains, methodcaller, not_, or_

import re2  # type: ignore[import-untyped]

from npuwatch.parsers.hccl.identity import IDENTITY_WORDS, mentions_identity
from npuwatch.parsers.hccl.init_lines import NETWORK_WORDS, mentions_network
from npuwatch.records import Record
from npuwatch.vocabulary import ERROR_LEVELS

HCCL_LOGGERS = frozenset({"HCCL", "HCCL_OPS", "HCOMM"})
WATCHED_LOGGERS = HCCL_LOGGERS | {"HCCP"}
"""HCCP prints the listen and connect steps of init and link setup (formats/hccl-init-and-link.md
R4, A3)."""
_NOT_QUIET = ERROR_LEVELS | {"DEBUG"}
"""Levels whose HCCL records are not keyword-tested: DEBUG is never read, ERRORs always are."""
_LEVEL = attrgetter("level")
_LOGGER = attrgetter("logger")
_ORIGINAL = attrgetter("original")


_OWN_WORDS = (
    "[HCCL_ENV]",
    "HcclCommResume",
    "connected rankinfo",
    "Cluster Exception",
    "] status[",
    "identifier[",
)
MAY_MATTER_WORDS = (*IDENTITY_WORDS, *NETWORK_WORDS, *_OWN_WORDS)
"""Every keyword `may_matter` can accept a line by: a line without one of them does not
matter (a test reads the keywords out of the functions themselves)."""
_ANY_WORD = re2.compile("|".join(map(re.escape, MAY_MATTER_WORDS)).encode())
_SEARCH_AT_ONCE_FROM = 64
_SAMPLE = 32
_PLUS_ONE = (1).__add__
_UTF8 = methodcaller("encode", "utf-8", "surrogatepass")
"""(A record read from JSON may hold a lone surrogate: it must not stop the batch.)"""


def may_matter(text: str) -> bool:
    """Whether an HCCL line that is not an ERROR can say anything to the extractor: identity,
    timeouts, a restart or recovery, the root's connected ranks, HCCL's own verdict, or the
    communicator that closes a root-info event."""
    return (
        mentions_identity(text)
        or "[HCCL_ENV]" in text
        or "HcclCommResume" in text
        or "connected rankinfo" in text
        or "Cluster Exception" in text
        or "] status[" in text
        or "identifier[" in text
        or mentions_network(text)
    )


def host_positions(records: Sequence[Record]) -> list[int]:
    """Positions, in order, of a host log's records that can matter: every ERROR, and HCCL's
    lines above DEBUG that `may_matter`."""
    levels = list(map(_LEVEL, records))
    present = _NOT_QUIET.intersection(levels)
    errors = [i for level in present & ERROR_LEVELS for i in _indexes(levels, level)]
    hccl = list(compress(count(), map(WATCHED_LOGGERS.__contains__, map(_LOGGER, records))))
    if present:  # (None is not DEBUG: HCCL records without a level are read)
        loud = map(_NOT_QUIET.__contains__, map(levels.__getitem__, hccl))
        hccl = list(compress(hccl, map(not_, loud)))
    matter = _mentioning(hccl, list(map(_ORIGINAL, map(records.__getitem__, hccl))))
    if not errors:
        return matter
    return sorted([*errors, *matter])


def _mentioning(positions: list[int], texts: list[str]) -> list[int]:
    """The positions whose text `may_matter`. Many lines of which few matter (a training job's
    op lines): one RE2 search of the joined texts for every keyword, then the exact test on the
    texts it found. Few lines, or lines most of which matter (start-up, a root's list of
    connected ranks): the exact test on each, which stops at its first keyword, while RE2
    costs a few microseconds a match."""
    if len(texts) < _SEARCH_AT_ONCE_FROM or sum(map(may_matter, texts[:_SAMPLE])) > _SAMPLE // 4:
        return list(compress(positions, map(may_matter, texts)))
    encoded = list(map(_UTF8, texts))  # (RE2 gives byte offsets; on str it converts each)
    starts = list(accumulate(map(_PLUS_ONE, map(len, encoded)), initial=0))
    found = dict.fromkeys(
        bisect_right(starts, match.start()) - 1 for match in _ANY_WORD.finditer(b"\n".join(encoded))
    )
    return [positions[index] for index in found if may_matter(texts[index])]


def device_positions(records: Sequence[Record]) -> Iterable[int]:
    """Positions, in order, of a device log's records that can matter: ERRORs (RDMA errors),
    HCCL's lines (AI-CPU notify waits) and the TLS state, whatever their level."""
    errors = map(ERROR_LEVELS.__contains__, map(_LEVEL, records))
    hccl = map(HCCL_LOGGERS.__contains__, map(_LOGGER, records))
    tls = map(contains, map(_ORIGINAL, records), repeat("TLS SWITCH"))
    return compress(count(), map(or_, map(or_, errors, hccl), tls))


def _indexes(values: list[str | None], wanted: str) -> list[int]:
    """Every index of `wanted` in `values`: `list.index` runs in C, and ERRORs are few."""
    found: list[int] = []
    at = -1
    try:
        while True:
            at = values.index(wanted, at + 1)
            found.append(at)
    except ValueError:
        return found
