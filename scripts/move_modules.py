#!/usr/bin/env python3
"""Move modules and packages with `git mv`, and rewrite every reference to them from a move map.

    scripts/move_modules.py MAP [--dry-run]

MAP is a text file of `OLD NEW` lines (paths from the repository's root; `#` starts a comment):
a file (`src/npuwatch/analysis/scan.py src/npuwatch/scan/aggregate.py`) or a folder, moved
whole. Every tracked text file is then rewritten where it names a moved module: dotted names
(`npuwatch.analysis.scan`, `tests.analysis.correlation`), paths from the repository's root
(`src/npuwatch/analysis/scan.py`, `tests/analysis/`) and paths from the package
(`analysis/scan.py`, as docstrings and docs write them); the changelog keeps the names it
had. Longer names are rewritten first, so a
module moved on its own wins over the folder it was in. A new folder gets an `__init__.py`
when it is under `src/` or `tests/`. The logic of the code is not touched: ruff sorts the
rewritten imports afterwards (`ruff check --select I --fix`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# The changelog tells what was, in the names it had then.
KEPT = {"CHANGELOG.md"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".in", ".sh", ""}


def read_map(path: Path) -> list[tuple[str, str]]:
    moves = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            sys.exit(f"move_modules: {path}:{number}: want `OLD NEW`, got {line!r}")
        moves.append((parts[0], parts[1]))
    return moves


def dotted(path: str) -> str | None:
    """The module name of a path under src/ or tests/ (None for other paths)."""
    stem = path.removesuffix(".py").removesuffix("/__init__")
    if stem.startswith("src/"):
        return stem.removeprefix("src/").replace("/", ".")
    if stem.startswith("tests/"):
        return stem.replace("/", ".")
    return None


def replacements(moves: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    """Each (pattern, new text), the longest old names first."""
    pairs: dict[str, str] = {}
    for old, new in moves:
        old_module, new_module = dotted(old), dotted(new)
        if old_module and new_module:
            pairs[old_module] = new_module
        pairs[old] = new
        if old.startswith("src/"):
            pairs[old.removeprefix("src/")] = new.removeprefix("src/")
            pairs[old.removeprefix("src/npuwatch/")] = new.removeprefix("src/npuwatch/")
    rules = []
    for old in sorted(pairs, key=len, reverse=True):
        # A name is a whole name: not the end of a longer dotted name or path, not a prefix
        # of a longer identifier (`analysis.scan` is not `analysis.scan_text`).
        before = r"(?<![\w./-])" if "/" in old else r"(?<![\w.])"
        rules.append((re.compile(rf"{before}{re.escape(old)}(?!\w)"), pairs[old]))
    return rules


def tracked_text_files(root: Path) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    files = []
    for name in listed.stdout.decode().split("\0"):
        path = root / name
        if not name or name in KEPT or path.suffix not in TEXT_SUFFIXES:
            continue
        if path.is_file() and not path.is_symlink():
            files.append(path)
    return files


def move(root: Path, moves: list[tuple[str, str]], dry_run: bool) -> None:
    for old, new in moves:
        target = root / new
        print(f"git mv {old} {new}")
        if dry_run:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", old, new], cwd=root, check=True)
        folder = target.parent
        while folder != root and folder.name not in {"src", "tests"}:
            init = folder / "__init__.py"
            if folder.parts[len(root.parts)] in {"src", "tests"} and not init.exists():
                init.write_text("", encoding="utf-8")
                subprocess.run(["git", "add", str(init)], cwd=root, check=True)
            folder = folder.parent


def rewrite(root: Path, moves: list[tuple[str, str]], dry_run: bool) -> None:
    rules = replacements(moves)
    for path in tracked_text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new_text = text
        for pattern, new in rules:
            new_text = pattern.sub(new, new_text)
        if new_text != text:
            print(f"rewrote {path.relative_to(root)}")
            if not dry_run:
                path.write_text(new_text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("map", type=Path, help="the move map: `OLD NEW` lines")
    parser.add_argument("--dry-run", action="store_true", help="say what would be done")
    arguments = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    moves = read_map(arguments.map)
    move(root, moves, arguments.dry_run)
    rewrite(root, moves, arguments.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
