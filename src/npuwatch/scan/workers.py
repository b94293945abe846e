"""The units of a scan read on several processes, each unit's part sent back as a host summary.

The workers are forked once the plan and the rules are made (`process_pool`), so they inherit
both (the rules are not compiled again, the tree not listed again); a task is the number of a
unit, and its answer the unit's part as the JSON text of a host summary (`summary`) — the file
the hosts of a two-stage scan write, so both paths are one format, read by one reader. Parts
come back in any order and are merged in the units' order: the result does not depend on which
worker finished first. A worker holds one host's part at a time, so its memory is bounded by
the largest host, not the collection.
"""

from __future__ import annotations

from collections.abc import Callable

from npuwatch.parsers.timestamps import LocalClock
from npuwatch.process_pool import forked_map
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.host_part import HostPart, read_unit
from npuwatch.scan.summary import HostSummary, read_summary_text, summary_text
from npuwatch.scan.units import ScanPlan

UnitDone = Callable[[int, int], None]
"""Called after each unit with (its files, its bytes)."""


def read_units(
    plan: ScanPlan,
    clock: LocalClock,
    context_lines: int,
    engine: RuleEngine | None,
    jobs: int,
    unit_done: UnitDone | None = None,
) -> list[HostPart]:
    """Every unit's part, read on `jobs` processes, in the units' order."""

    def read(index: int) -> tuple[str, int]:
        """In a worker: the unit's part as a summary's text, and the bytes read."""
        unit = plan.units[index]
        read_bytes = 0

        def file_done(size: int) -> None:
            nonlocal read_bytes
            read_bytes += size

        part = read_unit(unit, clock, plan.root, context_lines, engine, file_done)
        summary = HostSummary(str(plan.root), unit.host, part, context_lines)
        return summary_text(summary), read_bytes

    parts: dict[int, HostPart] = {}
    for index, (text, read_bytes) in forked_map(read, len(plan.units), jobs):
        parts[index] = read_summary_text(text, f"the part of unit {index}").part
        if unit_done is not None:
            unit_done(plan.units[index].file_count, read_bytes)
    return [parts[index] for index in range(len(plan.units))]
