"""Reading profiling output: a large torch_npu run through the parsers and the operator table.

    python bench/profile_bench.py [--rows 200000] [--work /tmp/npuwatch-profile-bench]

Writes one run whose kernel_details.csv holds `--rows` kernel rows (the fixture's rank-0 rows,
repeated with shifted start times, quirks included: quoted shapes, a tab after each start time,
CRLF line ends), then times, each in a fresh interpreter:

- reference: `pandas.read_csv` of that file with its defaults (the floor: no cleaning, no
  canonical columns, no problem reporting);
- npuwatch: `load_profile` (every file of the run, canonical columns, numbers, problems) and
  `operator_table` (the per-operator aggregate the baseline archive and the agent use).

Prints rows/s, MB/s, CPU time and peak RSS of each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.profiling.make_profiles import write_torch_run

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
started, cpu = time.perf_counter(), time.process_time()
kernels = Path(sys.argv[2]) / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
if sys.argv[1] == "reference":
    import pandas
    rows = len(pandas.read_csv(kernels))
else:
    from npuwatch.profiling.msprof.operators import operator_table
    from npuwatch.profiling.msprof.run import load_profile
    run = load_profile(Path(sys.argv[2]))
    rows = len(run.kernels)
    operators = len(operator_table(run))
print(json.dumps({
    "rows": rows,
    "seconds": time.perf_counter() - started,
    "cpu": time.process_time() - cpu,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def build_run(work: Path, rows: int) -> Path:
    """A run whose kernel_details.csv has `rows` kernel rows."""
    run = write_torch_run(work)
    kernels = run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    header, *body = kernels.read_bytes().split(b"\r\n")
    body = [line for line in body if line]
    out = [header]
    repeat = 0
    while len(out) - 1 < rows:
        for line in body:
            if len(out) - 1 >= rows:
                break
            out.append(_shifted(line, repeat))
        repeat += 1
    kernels.write_bytes(b"\r\n".join(out) + b"\r\n")
    return run


def _shifted(line: bytes, repeat: int) -> bytes:
    # The start time is the one quoted field with a tab: move each copy 1 s later.
    head, quote, rest = line.partition(b'"')
    if not quote or b'\t"' not in rest:
        return line
    value, _, tail = rest.partition(b'\t"')
    try:
        start = float(value) + repeat * 1_000_000
    except ValueError:
        return line
    return head + b'"' + f"{start:.3f}".encode() + b'\t"' + tail


def measure(what: str, run: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, what, str(run)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(result.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="npuwatch-profile-bench-"))
    try:
        run = build_run(work, args.rows)
        size = (run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").stat().st_size
        print(f"kernel_details.csv: {args.rows:,} rows, {size / 1e6:.1f} MB")
        print(f"{'':28} {'rows/s':>10} {'MB/s':>7} {'wall s':>7} {'cpu s':>6} {'peak RSS':>9}")
        for label, what in (
            ("reference pandas.read_csv", "reference"),
            ("npuwatch load + table", "npuwatch"),
        ):
            figures = measure(what, run)
            seconds = figures["seconds"]
            print(
                f"{label:28} {figures['rows'] / seconds:>10,.0f} {size / 1e6 / seconds:>7.1f} "
                f"{seconds:>7.2f} {figures['cpu']:>6.2f} {figures['rss_mb']:>7.0f} MB"
            )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
