"""The cost of the default rules as CPU instructions, counted by valgrind (callgrind).

Wall-clock timings on a shared VM vary by 10-30 % from run to run; instruction counts do not
(with a fixed PYTHONHASHSEED). This runs the same read-and-parse of N files of the benchmark tree
three times under callgrind — start-up only, parse, parse with the default rules — and prints
the share of parsing throughput the rules cost.

    python bench/rules_cost.py --tree /tmp/tree1m --files 8
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules
from parse_bench import read_and_parse


def workload(tree: Path, files: int, mode: str) -> None:
    """What is measured: read and parse `files` files, with rules when mode is "rules"."""
    tune_garbage_collector()
    rules = load_rules(default_locations(system=Path("/nonexistent")))
    if mode != "startup":
        paths = sorted(tree.rglob("*.log"))[:files]
        read_and_parse(paths, RuleEngine(rules) if mode == "rules" else None)


def instructions(tree: Path, files: int, mode: str) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={scratch}/out",
                sys.executable,
                __file__,
                "--run",
                mode,
                "--tree",
                str(tree),
                "--files",
                str(files),
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
    return int(re.search(r"Collected : (\d+)", result.stderr)[1])  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True, help="from bench/make_tree.py")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        workload(args.tree, args.files, args.run)
        return
    startup, plain, rules = (
        instructions(args.tree, args.files, m) for m in ("startup", "parse", "rules")
    )
    lines = sum(p.read_bytes().count(b"\n") for p in sorted(args.tree.rglob("*.log"))[: args.files])
    parse = plain - startup
    with_rules = rules - startup
    print(
        f"{lines:,} lines: parse {parse / lines:,.0f} instructions a line, "
        f"parse + rules {with_rules / lines:,.0f}"
    )
    print(
        f"the rules cost {100 * (1 - parse / with_rules):.1f}% of the parsing throughput "
        f"(target: at most 25%)"
    )


if __name__ == "__main__":
    main()
