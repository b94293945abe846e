"""What the agent keeps of a profiling run, worked out in a child process.

Reading a large run takes pandas and hundreds of megabytes for a few seconds (a 200,000-kernel
kernel_details.csv peaks near 600 MB). The agent runs next to training jobs and lives for
months, and a Python process seldom gives such memory back; so a child process reads the run
and prints its digest as JSON (the operator table, the mean step, the cube utilisation), and
exits, returning the memory. The agent itself never imports pandas.

    python -I -m npuwatch.agent.profiling_digest RUN_FOLDER     # one JSON document on stdout
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npuwatch.agent.child_reader import read_in_child

if TYPE_CHECKING:
    from npuwatch.profiling.msprof.run import ProfileRun


@dataclass(frozen=True)
class RunDigest:
    """One rank's or device's run, as far as the agent needs it."""

    label: str
    device: int | None
    """The device id, else the rank, else None."""
    operators: list[dict[str, Any]]
    """The operator table's rows (OPERATOR_COLUMNS), slowest first."""
    step_us: float | None
    aicore_ratio: float | None
    first_start_us: int | None
    """When the run's first kernel started (µs since the epoch)."""
    problems: list[str] = field(default_factory=list)


def digest_runs(folder: Path) -> list[RunDigest]:
    """The digest of every run (rank, device) under `folder` that has data. Uses pandas."""
    from npuwatch.profiling.msprof.operators import operator_table  # noqa: PLC0415
    from npuwatch.profiling.msprof.run import load_profiles  # noqa: PLC0415
    from npuwatch.profiling.steps import rank_steps  # noqa: PLC0415 - pandas

    digests = []
    for run in load_profiles(folder):
        if not run.has_data:
            continue
        steps = rank_steps(run, run.label)
        table = operator_table(run)
        digests.append(
            RunDigest(
                label=run.label,
                device=run.device_id if run.device_id is not None else run.rank,
                operators=[_plain_row(row) for row in table.to_dict("records")],
                step_us=None if steps is None else steps.step_us,
                aicore_ratio=_cube_utilization(run),
                first_start_us=_first_start_us(run),
                problems=list(run.problems),
            )
        )
    return digests


def digests_in_child(
    folder: Path, timeout_s: float = 600.0, stop: threading.Event | None = None
) -> list[RunDigest]:
    """`digest_runs(folder)` in a child interpreter (see the module docstring); the child is
    killed (ChildStopped) once `stop` is set."""
    arguments = [str(folder.absolute())]  # the child starts in /
    document = read_in_child("npuwatch.agent.profiling_digest", arguments, timeout_s, stop)
    return [RunDigest(**run) for run in document["runs"]]


def _plain_row(row: dict[Any, Any]) -> dict[str, Any]:
    from npuwatch.profiling.msprof.values import plain_value  # noqa: PLC0415 - pandas

    return {str(key): plain_value(value) for key, value in row.items()}


def _cube_utilization(run: ProfileRun) -> float | None:
    """msprof's cube_utilization(%) of the kernels, weighted by their duration, 0 to 1 (None
    when the run was profiled without the PipeUtilization metrics that carry it)."""
    kernels = run.kernels
    if "cube_utilization_pct" not in kernels.columns:
        return None
    known = kernels[kernels["cube_utilization_pct"].notna() & kernels["duration_us"].notna()]
    weight = float(known["duration_us"].sum())
    if known.empty or weight <= 0:
        return None
    weighted = float((known["cube_utilization_pct"] * known["duration_us"]).sum())
    return weighted / weight / 100


def _first_start_us(run: ProfileRun) -> int | None:
    if "start_us" not in run.kernels.columns or run.kernels.empty:
        return None
    first = float(run.kernels["start_us"].min())
    return int(first) if not math.isnan(first) and first > 0 else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -I -m npuwatch.agent.profiling_digest RUN_FOLDER\n")
        return 2
    try:
        digests = digest_runs(Path(argv[0]))
    except Exception as error:  # the parent logs this line
        sys.stderr.write(f"{type(error).__name__}: {error}\n")
        return 1
    json.dump({"runs": [asdict(digest) for digest in digests]}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
