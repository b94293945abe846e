"""Loading rule packs: the files → packs of compiled rules → the rules in force, with every problem
reported as `file:line:column: what is wrong`.

Packs are read in order: the defaults shipped in `npuwatch/rules/packs/`, then
`/etc/npuwatch/rules.d/`, then any `--rules` folders or files. A later rule with the same id
replaces the earlier one; a pack's `disable:` list switches rules off by id.

A pack file is read by rules/pack_file.py (YAML, the schema, the grammar), or, when a command
passes a cache that holds the same files unchanged, comes back from rules/rule_cache.py without
any of those: this module imports neither, so that such a command never loads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from npuwatch.default_paths import SYSTEM_RULES
from npuwatch.rules.model import Rule
from npuwatch.rules.pack import Pack, Problem, RuleLoadError

if TYPE_CHECKING:
    from npuwatch.rules.rule_cache import RuleCache

DEFAULT_PACKS = Path(__file__).resolve().parent / "packs"


@dataclass
class RuleSet:
    """The rules in force, in load order, and the files they came from."""

    rules: list[Rule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)

    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}


def rule_files(locations: Iterable[Path]) -> list[Path]:
    """The `*.yaml`/`*.yml` files at or under each location, each folder in name order."""
    files: list[Path] = []
    for location in locations:
        if location.is_dir():
            files.extend(
                sorted(
                    p for p in location.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()
                )
            )
        else:
            files.append(location)
    return files


def default_locations(extra: Sequence[Path] = (), system: Path = SYSTEM_RULES) -> list[Path]:
    locations = [DEFAULT_PACKS]
    if system.is_dir():
        locations.append(system)
    locations.extend(extra)
    return locations


def load_rules(locations: Sequence[Path], cache: RuleCache | None = None) -> RuleSet:
    """Load and merge the packs at `locations`; raises RuleLoadError listing every problem.

    With a cache, packs it holds unchanged are not read again, and packs read are kept in it.
    """
    files = rule_files(locations)
    entry = cache.entry(files) if cache is not None else None
    packs = entry.read() if entry is not None else None
    if packs is None:
        packs = _read_packs(files)
        if entry is not None:
            entry.write(packs)
    ruleset = RuleSet()
    merged: dict[str, Rule] = {}
    for path, pack in zip(files, packs, strict=True):
        ruleset.files.append(str(path))
        for rule in pack.rules:
            merged.pop(rule.id, None)  # a later rule with the same id replaces (and re-orders)
            merged[rule.id] = rule
        ruleset.disabled.update(pack.disable)
    ruleset.rules = [rule for rule_id, rule in merged.items() if rule_id not in ruleset.disabled]
    return ruleset


def _read_packs(files: Sequence[Path]) -> list[Pack]:
    """Every pack file read and checked; RuleLoadError when any has a problem."""
    # YAML, pydantic and the grammar: about 0.15 s that a command served by the cache never pays.
    from npuwatch.rules.pack_file import load_pack  # noqa: PLC0415

    problems: list[Problem] = []
    packs: list[Pack] = []
    for path in files:
        pack, found = load_pack(path)
        problems.extend(found)
        if pack is not None:
            packs.append(pack)
    if problems:
        raise RuleLoadError(problems)
    return packs
