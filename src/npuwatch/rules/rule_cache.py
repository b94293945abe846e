"""Rule packs as last read, kept between runs so that a command reads its rules in a few
milliseconds instead of 0.15 s of YAML, pydantic and the condition grammar.

One file per set of rule files (named by a hash of their paths) holds, for each pack, its name,
its `disable:` list and each rule's validated spec, origin and condition tree, as JSON
(rules/rule_cache_format.py); the rules are compiled again from these (cheap). The file is used
only while every rule file holds the bytes it held when read, and the modules that give a pack
its meaning are those it was written with: that stamp is the file's first line, compared before
anything else in it is read. Anything wrong with the file makes it a miss: the packs are read
again.

What runs as root must not take its rules from a file another user could have written (`sudo
-E npuwatch scan`, a shared cache variable): the folder must be this user's and writable by no
one else (private_files.folder_problem), else there is no cache and one warning says why; the
file must be a regular file of this user, opened without following a link. Written as a new
file (O_EXCL, mode set on the descriptor) renamed into place.

The cache is an optimisation that never stops a command: a folder that cannot be written is
left alone. `npuwatch rules check` and `rules test` always read the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from npuwatch import __version__
from npuwatch.private_files import PRIVATE_DIRECTORY, PRIVATE_FILE, folder_problem
from npuwatch.rules import rule_cache_format
from npuwatch.rules.condition import And, Comparison, Not, Or
from npuwatch.rules.model import Rule
from npuwatch.rules.pack import Pack, build_rule
from npuwatch.rules.patterns import LinearPattern, compile_pattern, restore_patterns
from npuwatch.untrusted_files import read_trusted_file

_RULES_FOLDER = Path(__file__).resolve().parent
# A pack's meaning comes from the schema (defaults, validation), the grammar, the classes the
# cache holds and its file format: a change to any of them (an upgrade, an edit in a checkout)
# makes old files misses.
_MEANING = tuple(
    _RULES_FOLDER / name
    for name in (
        "schema.py",
        "grammar.py",
        "condition.py",
        "model.py",
        "pack_file.py",
        "rule_cache_format.py",
        "patterns.py",
        "regex_syntax.py",
        "regex_literals.py",
    )
)
_MOST_BYTES = 64 << 20
"""A cache file larger than this is not read (the default packs take about 100 KB)."""
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class RuleCache:
    """The rule cache in `folder` (created when first written); `warn` takes the one line that
    says why the folder is not used, once."""

    def __init__(self, folder: Path, warn: Callable[[str], None] | None = None) -> None:
        self.folder = folder
        self._warn = warn
        self._refused: str | None = None

    def entry(self, files: Sequence[Path]) -> CacheEntry | None:
        """The cache's place for the packs of `files`, stamped with what they hold now; None when
        a file cannot be read (reading the packs will say why) or the folder is refused.

        Taken before the packs are read: a file edited while they are read then leaves an entry
        whose stamp no longer matches the file, a miss next time, never packs older than it."""
        if self.refused() is not None:
            return None
        stamp = _stamp(files)
        if stamp is None:
            return None
        names = "\0".join(str(path.resolve()) for path in files)
        path = self.folder / f"rules-{hashlib.sha256(names.encode()).hexdigest()[:20]}.json"
        return CacheEntry(path, stamp, self, len(files))

    def refused(self) -> str | None:
        """Why the folder may not hold this user's cache (said once through `warn`), or None."""
        if self._refused is None:
            problem = folder_problem(self.folder)
            if problem is not None:
                self._refused = problem
                if self._warn is not None:
                    self._warn(
                        f"the rule cache in {self.folder} is not used: {problem} (set "
                        "NPUWATCH_CACHE to a folder of your own, or to nothing)"
                    )
        return self._refused


@dataclass(frozen=True)
class CacheEntry:
    """One cache file and the stamp its packs must have been kept with."""

    path: Path
    stamp: str
    cache: RuleCache
    files: int
    """How many packs the entry holds (one per rule file)."""

    def read(self) -> list[Pack] | None:
        """The packs kept under this stamp, else None."""
        data = _read_own_file(self.path)
        if data is None:
            return None
        try:
            kept, patterns = rule_cache_format.decode(data, self.stamp)
            if len(kept) != self.files:
                return None
            restore_patterns(patterns)
            return [
                Pack(name, disable, tuple(build_rule(s, name, o, c) for s, o, c in rules))
                for name, disable, rules in kept
            ]
        # A damaged, foreign or outdated file is only a miss: decoding checks every field, and
        # compiling again can fail in more ways than these, none of which may stop the command.
        except Exception:
            return None

    def write(self, packs: Sequence[Pack]) -> None:
        """Keep `packs` under this stamp; quietly nothing when the folder cannot be written."""
        kept: list[rule_cache_format.CachedPack] = []
        for pack in packs:
            rules = tuple((rule.spec, rule.origin, rule.node) for rule in pack.rules)
            if any(node is None for _, _, node in rules):
                return  # not a pack read from its file: there is nothing to keep it by
            kept.append((pack.name, pack.disable, rules))  # type: ignore[arg-type]
        patterns = {
            pattern.parts: None
            for pack in packs
            for rule in pack.rules
            for pattern in _patterns(rule)
        }
        data = rule_cache_format.encode(self.stamp, kept, list(patterns))
        folder = self.path.parent
        try:
            _make_folder(folder)
        except OSError:
            return
        if self.cache.refused() is not None:  # made by someone else meanwhile
            return
        try:
            descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".rules-", suffix=".tmp")
        except OSError:
            return
        try:
            os.fchmod(descriptor, PRIVATE_FILE)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            Path(temporary).replace(self.path)
        except OSError:
            Path(temporary).unlink(missing_ok=True)


def _patterns(rule: Rule) -> list[LinearPattern]:
    """The compiled patterns of a rule: its extract patterns and those of its condition."""
    found = list(rule.patterns)
    stack = [rule.node]
    while stack:
        node = stack.pop()
        if isinstance(node, And | Or):
            stack.extend(node.operands)
        elif isinstance(node, Not):
            stack.append(node.operand)
        elif isinstance(node, Comparison) and node.op == "~":
            found.append(compile_pattern(str(node.values[0]), node.flags))
    return found


def _read_own_file(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file of this user that no one else can write,
    opened without following a link; else None."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if (
            not stat.S_ISREG(status.st_mode)
            or status.st_uid != os.geteuid()
            or status.st_mode & _OTHERS_WRITE
            or status.st_size > _MOST_BYTES
        ):
            return None
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(_MOST_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _make_folder(folder: Path) -> None:
    """Create `folder` and its missing parents 0700 (not following a link at the last step)."""
    missing = []
    current = folder
    while not current.exists() and not current.is_symlink() and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(PRIVATE_DIRECTORY)


def _stamp(files: Sequence[Path]) -> str | None:
    """What the cached packs depend on: the bytes of every rule file and of the modules that give
    them meaning (hashing them costs a tenth of a millisecond, and unlike a modification time it
    cannot miss an edit made within the same clock tick). None when a file cannot be read."""
    digest = hashlib.sha256(__version__.encode())
    try:
        for path in (*_MEANING, *files):
            digest.update(f"\0{path}\0".encode())
            digest.update(read_trusted_file(path))  # as the packs are read: no FIFO, no stall
    except OSError:
        return None
    return digest.hexdigest()
