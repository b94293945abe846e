"""What opening a file through untrusted_files costs, beside a plain `os.open` in the same run.

Every file npuwatch reads is opened by `untrusted_files.open_file`: O_NOFOLLOW | O_NONBLOCK,
fstat, and the kernel's name of the file opened compared with the path asked for. This makes
`--files` files in a folder `--depth` deep under a scratch folder, opens and closes each of
them with both, alternately, and prints the CPU a file of each (the best of `--rounds`).

    python bench/open_bench.py --files 2000 --depth 4
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from npuwatch.untrusted_files import open_file


def plain(paths: list[str]) -> None:
    for path in paths:
        os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC))


def untrusted(paths: list[str]) -> None:
    for path in paths:
        os.close(open_file(path))


def cpu_per_file(function: Callable[[list[str]], None], paths: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        function(paths)
        best = min(best, time.process_time() - started)
    return best / len(paths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path.home()) as scratch:
        folder = Path(scratch).joinpath(*["d"] * args.depth)
        folder.mkdir(parents=True)
        paths = []
        for number in range(args.files):
            path = folder / f"plog-{number}_1.log"
            path.write_bytes(b"x\n")
            paths.append(str(path))
        for name, function in (("os.open (reference)", plain), ("open_file", untrusted)):
            micro = cpu_per_file(function, paths, args.rounds) * 1e6
            print(
                f"{name:22s} {micro:6.1f} us of CPU a file ({args.files} files, depth {args.depth})"
            )


if __name__ == "__main__":
    main()
