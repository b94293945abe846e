"""What each match of a rule needs, read once from its spec: the values that key the dedupe
window it joins, the window, whether it counts towards a threshold, and the context after it.

Most matches of a plog's errors join an event still open (one process repeats its error), so
the engine's work per match is mostly reading this key: one function per set of `dedupe.by`
fields, called once per record for the rules that share it.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, NamedTuple

from npuwatch.records import Record
from npuwatch.rules.fields import resolve_field
from npuwatch.rules.model import Rule

DedupeTail = Callable[[Record], tuple[Any, ...]]
"""The values that, with a rule's id, key the dedupe window of a match."""


class RuleFacts(NamedTuple):
    """What each match of a rule needs, read once from its spec."""

    id: str
    window: float
    """The dedupe window, in µs."""
    dedupe_tail: DedupeTail
    """The values that, with the rule's id, key the dedupe window of a match (`dedupe_tail`):
    the same function for the rules that dedupe by the same fields."""
    thresholded: bool
    after: int
    """Records of context after a match."""


def facts_of(
    rule: Rule,
    getters: tuple[Callable[[Record], Any], ...],
    tails: dict[tuple[str | None, ...], DedupeTail],
) -> RuleFacts:
    """The facts of `rule`, whose `dedupe.by` fields `getters` read; `tails` keeps one key
    function per set of fields, shared by the rules that dedupe alike."""
    spec = rule.spec
    by = tuple(map(resolve_field, spec.dedupe.by))
    if by not in tails:
        tails[by] = dedupe_tail(by, getters)
    return RuleFacts(
        rule.id,
        spec.dedupe.within * 1_000_000,
        tails[by],
        spec.threshold is not None,
        spec.context.after,
    )


def dedupe_tail(
    by: tuple[str | None, ...], getters: tuple[Callable[[Record], Any], ...]
) -> DedupeTail:
    """The values that, with the rule's id, key the dedupe window a match joins: the host and
    the rank, then the values of the `dedupe.by` fields (`by`, resolved, read by `getters`).
    Whatever a rule groups by, one event never stands for several hosts or ranks: the lines of
    the ranks of a job often carry no pid (c10, torch_npu), and an operator must see which ranks
    failed and which did not."""
    if by == ("host.name", "process.pid"):

        def by_host_and_pid(record: Record) -> tuple[Any, ...]:  # the default
            source = record.source
            host = None if source is None else source.host
            return (host, record.rank, host, record.pid)

        return by_host_and_pid
    if by and all(name in _SOURCE_ATTRIBUTES for name in by):
        read = attrgetter(*(_SOURCE_ATTRIBUTES[name] for name in by if name is not None))
        unknown = (None,) * len(by)

        def by_stream(record: Record) -> tuple[Any, ...]:  # the same for a stream's records
            source = record.source
            if source is None:
                return (None, record.rank, *unknown)
            values = read(source)
            return (source.host, record.rank, *(values if len(by) > 1 else (values,)))

        return by_stream

    def by_fields(record: Record) -> tuple[Any, ...]:
        source = record.source
        host = None if source is None else source.host
        return (host, record.rank, *[getter(record) for getter in getters])

    return by_fields


_SOURCE_ATTRIBUTES = {
    "host.name": "host",
    "log.file.path": "path",
    "ascend.kind": "kind",
    "ascend.channel": "channel",
}
"""The fields of `STREAM_FIELDS`, as attributes of a record's source."""
