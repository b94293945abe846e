"""What building the C extensions for the stable ABI (one abi3 wheel for Python 3.11 and later)
costs, as CPU instructions counted by valgrind (callgrind): the limited API reads a list's items
and a bytes object's buffer through functions rather than macros.

Both extensions are compiled twice from the same sources, with and without Py_LIMITED_API,
into two copies of the package; the same parse (and block encoding) of a generated tree then
runs under callgrind with each copy, and the counts are printed side by side.

    python bench/stable_abi_cost.py [--lines 40000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from make_tree import write_tree

SOURCE = Path(__file__).resolve().parents[1] / "src" / "npuwatch"
EXTENSIONS = ("parsers/_speedups", "journal/_columns")
WORKLOAD = """
import sys
from datetime import timezone
from pathlib import Path
from npuwatch.journal import block_columns
from npuwatch.journal.block import encode_block
from npuwatch.parsers import first_pass
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
assert first_pass.NATIVE and block_columns.NATIVE, "the C extensions did not load"
files = [(str(p), p.read_bytes()) for p in sorted(Path(sys.argv[1]).rglob("*.log"))]
for path, data in files:
    parser = StreamParser(LocalClock(timezone.utc), path)
    records = parser.feed(data) + parser.flush()
    if sys.argv[2] == "encode":
        for start in range(0, len(records), 4096):
            encode_block(records[start : start + 4096])
"""


def package_built(folder: Path, limited: bool) -> Path:
    """A copy of the package with the extensions compiled one way."""
    shutil.copytree(
        SOURCE, folder / "npuwatch", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    include = sysconfig.get_paths()["include"]
    suffix = ".abi3.so" if limited else sysconfig.get_config_var("EXT_SUFFIX")
    for name in EXTENSIONS:
        command = ["gcc", "-shared", "-fPIC", "-O2", f"-I{include}", f"-I{SOURCE}"]
        command += ["-DPy_LIMITED_API=0x030B0000"] if limited else []
        command += [str(SOURCE / f"{name}.c"), "-o", str(folder / "npuwatch" / f"{name}{suffix}")]
        subprocess.run(command, check=True)
    return folder


def instructions(package: Path, tree: Path, mode: str) -> int:
    environment = {**os.environ, "PYTHONPATH": str(package), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-c", WORKLOAD, str(tree), mode],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr
    return int(found[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=40_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write_tree(work / "tree", args.lines, seed=7)
        builds = {
            "own API (cp311)": package_built(work / "full", limited=False),
            "stable ABI (abi3)": package_built(work / "limited", limited=True),
        }
        counts = {
            name: {mode: instructions(package, work / "tree", mode) for mode in ("parse", "encode")}
            for name, package in builds.items()
        }
    print(f"{args.lines:,} generated lines; instructions, start-up included")
    print(f"{'build':<20} {'parse':>15} {'parse + encode':>16}")
    for name, count in counts.items():
        print(f"{name:<20} {count['parse']:>15,} {count['encode']:>16,}")
    own, stable = counts.values()
    for mode in ("parse", "encode"):
        change = (stable[mode] - own[mode]) / own[mode] * 100
        print(f"stable ABI against own API, {mode}: {change:+.2f} %")


if __name__ == "__main__":
    main()
