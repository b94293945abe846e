"""Reading msprobe monitor output: a long run through `npuwatch monitor summary`.

    python bench/monitor_bench.py [--steps 100000] [--parameters 64] [--work /tmp/...]

Writes one rank's grad_reduced statistics (ops norm, min, max, mean, nans) for `--steps` steps
× `--parameters` parameters, 5,000 steps per file as msprobe's step_count_per_record would
split them, then times, each in a fresh interpreter:

- reference: `pandas.read_csv` of every file with its defaults (the floor: no checks, no
  rank, no analysis);
- npuwatch streaming: `summarise_monitor_folder` (every check of the parser, NaN counts and the
  spike search, one file at a time), the whole of `npuwatch monitor summary` but the printing;
- npuwatch whole: `load_monitor` + `summarise_monitor`, every row held at once (what `--plot`
  needs).

Prints rows/s, MB/s, wall and CPU time, peak RSS of each, and the ratios of wall time and peak
RSS to the reference's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

STEPS_PER_FILE = 5_000

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
started, cpu = time.perf_counter(), time.process_time()
root = Path(sys.argv[2])
if sys.argv[1] == "reference":
    import pandas
    rows = sum(len(pandas.read_csv(path)) for path in sorted(root.rglob("*.csv")))
elif sys.argv[1] == "streaming":
    from npuwatch.debug_tools.monitor.summary import summarise_monitor_folder
    rows = sum(table.rows for table in summarise_monitor_folder(root).tables)
else:
    from npuwatch.debug_tools.monitor.summary import summarise_monitor
    from npuwatch.debug_tools.monitor.read import load_monitor
    rows = sum(table.rows for table in summarise_monitor(load_monitor(root)).tables)
print(json.dumps({
    "rows": rows,
    "seconds": time.perf_counter() - started,
    "cpu": time.process_time() - cpu,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def build_run(work: Path, steps: int, parameters: int) -> Path:
    """A monitor_output/rank0 with grad_reduced files, one parameter 20× at the middle step."""
    rank = work / "monitor_output" / "rank0"
    rank.mkdir(parents=True, exist_ok=True)
    draw = np.random.default_rng(0)
    names = np.asarray([f"0:layers.{i // 4}.w{i % 4}.weight" for i in range(parameters)])
    for first in range(0, steps, STEPS_PER_FILE):
        last = min(first + STEPS_PER_FILE, steps) - 1
        count = (last - first + 1) * parameters
        norm = 1 + 0.05 * draw.standard_normal(count)
        step = np.repeat(np.arange(first, last + 1), parameters)
        norm[(step == steps // 2) & (np.arange(count) % parameters == 3)] *= 20
        frame = pd.DataFrame(
            {
                "vpp_stage": 0,
                "name": np.tile(names, last - first + 1),
                "step": step,
                "norm": norm,
                "min": -norm / 50,
                "max": norm / 50,
                "mean": draw.standard_normal(count) * 1e-4,
                "nans": 0,
            }
        )
        frame.to_csv(rank / f"grad_reduced_{first}-{last}.csv", index=False, float_format="%.6g")
    return rank.parent


def measure(what: str, root: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, what, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(result.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--parameters", type=int, default=64)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="npuwatch-monitor-bench-"))
    try:
        root = build_run(work, args.steps, args.parameters)
        size = sum(path.stat().st_size for path in root.rglob("*.csv"))
        files = len(list(root.rglob("*.csv")))
        print(
            f"grad_reduced: {args.steps:,} steps × {args.parameters} parameters in {files} "
            f"files, {size / 1e6:.1f} MB"
        )
        print(f"{'':30} {'rows/s':>10} {'MB/s':>7} {'wall s':>7} {'cpu s':>6} {'peak RSS':>9}")
        results = {}
        for label, what in (
            ("reference pandas.read_csv", "reference"),
            ("npuwatch streaming summary", "streaming"),
            ("npuwatch whole load+summary", "whole"),
        ):
            figures = results[what] = measure(what, root)
            seconds = figures["seconds"]
            print(
                f"{label:30} {figures['rows'] / seconds:>10,.0f} {size / 1e6 / seconds:>7.1f} "
                f"{seconds:>7.2f} {figures['cpu']:>6.2f} {figures['rss_mb']:>7.0f} MB"
            )
        reference = results["reference"]
        for what in ("streaming", "whole"):
            wall = results[what]["seconds"] / reference["seconds"]
            rss = results[what]["rss_mb"] / reference["rss_mb"]
            print(f"npuwatch {what} / read_csv: wall time {wall:.2f}×, peak RSS {rss:.2f}×")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
