"""Rule packs as last read, kept between runs so that a command reads its rules in a few
milliseconds instead of 0.15 s of YAML, pydantic and the condition grammar.

One file per set of rule files (named by a hash of their paths) holds, for each pack, its name,
its `disable:` list and each rule's validated spec, origin and condition tree; the rules are
compiled again from these (cheap, and compiled rules hold closures that do not pickle). The file
is used only while every rule file holds the bytes it held when read, and the modules that give a
pack its meaning are those it was written with. Anything wrong with the cache file makes it a
miss: the packs are read again.

The cache is an optimisation that never stops a command: a folder that cannot be written is
left alone. `npuwatch rules check` and `rules test` always read the files.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from npuwatch import __version__
from npuwatch.rules.condition import Node
from npuwatch.rules.model import RuleSpec
from npuwatch.rules.pack import Pack, build_rule

_RULES_FOLDER = Path(__file__).resolve().parent
# A pack's meaning comes from the schema (defaults, validation), the grammar and the classes the
# cache holds: a change to any of them (an upgrade, an edit in a checkout) makes old files misses.
_MEANING = tuple(
    _RULES_FOLDER / name
    for name in ("schema.py", "grammar.py", "condition.py", "model.py", "pack_file.py")
)

CachedPack = tuple[str, tuple[str, ...], tuple[tuple[RuleSpec, str, Node], ...]]
"""A pack as the cache keeps it: name, disable list, and (spec, origin, condition) per rule."""


class RuleCache:
    """The rule cache in `folder` (created when first written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def entry(self, files: Sequence[Path]) -> CacheEntry | None:
        """The cache's place for the packs of `files`, stamped with what they hold now; None when
        a file cannot be read (reading the packs will say why).

        Taken before the packs are read: a file edited while they are read then leaves an entry
        whose stamp no longer matches the file, a miss next time, never packs older than it."""
        stamp = _stamp(files)
        if stamp is None:
            return None
        names = "\0".join(str(path.resolve()) for path in files)
        path = self.folder / f"rules-{hashlib.sha256(names.encode()).hexdigest()[:20]}.pickle"
        return CacheEntry(path, stamp)


@dataclass(frozen=True)
class CacheEntry:
    """One cache file and the stamp its packs must have been kept with."""

    path: Path
    stamp: str

    def read(self) -> list[Pack] | None:
        """The packs kept under this stamp, else None."""
        try:
            with self.path.open("rb") as handle:
                kept_stamp, packs = pickle.load(handle)
            if kept_stamp != self.stamp:
                return None
            return [_pack(kept) for kept in packs]
        # A damaged, foreign or outdated file is only a miss: unpickling and compiling again
        # can fail in more ways than these, none of which may stop the command.
        except Exception:
            return None

    def write(self, packs: Sequence[Pack]) -> None:
        """Keep `packs` under this stamp; quietly nothing when the folder cannot be written."""
        kept = [
            (
                pack.name,
                pack.disable,
                tuple((rule.spec, rule.origin, rule.node) for rule in pack.rules),
            )
            for pack in packs
        ]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".rules-")
        except OSError:
            return
        try:
            with os.fdopen(descriptor, "wb") as handle:
                pickle.dump((self.stamp, kept), handle, protocol=pickle.HIGHEST_PROTOCOL)
            Path(temporary).replace(self.path)
        except OSError:
            Path(temporary).unlink(missing_ok=True)


def _pack(kept: CachedPack) -> Pack:
    name, disable, rules = kept
    return Pack(
        name, disable, tuple(build_rule(spec, name, origin, node) for spec, origin, node in rules)
    )


def _stamp(files: Sequence[Path]) -> str | None:
    """What the cached packs depend on: the bytes of every rule file and of the modules that give
    them meaning (hashing them costs a tenth of a millisecond, and unlike a modification time it
    cannot miss an edit made within the same clock tick). None when a file cannot be read."""
    digest = hashlib.sha256(__version__.encode())
    try:
        for path in (*_MEANING, *files):
            digest.update(f"\0{path}\0".encode())
            digest.update(path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()
