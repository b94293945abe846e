"""The rules a command runs with: npuwatch's packs, the site's, and any given with `--rules`.

Apart from `npuwatch rules` (rules_run.py), so that `scan` and the other commands that load rules
import only this, and read the packs through the user's rule cache (rules/rule_cache.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from npuwatch.commands.outcome import error, fail
from npuwatch.default_paths import cache_folder
from npuwatch.rules.loader import RuleSet, default_locations, load_rules
from npuwatch.rules.pack import RuleLoadError
from npuwatch.rules.rule_cache import RuleCache


def load_rules_or_fail(extra: Sequence[Path]) -> RuleSet:
    """The default packs plus `extra`, through the user's rule cache; Problems naming every
    problem when they do not load."""
    for location in extra:
        if not location.exists():
            fail(f"rule pack {location} does not exist: give a folder of *.yaml files or a file")
    folder = cache_folder()
    cache = RuleCache(folder, warn=lambda line: error(f"warning: {line}")) if folder else None
    try:
        return load_rules(default_locations(extra), cache)
    except RuleLoadError as problems:
        raise RuleLoadError(
            problems.problems, "the rules have errors (see above): fix them or leave out --rules"
        ) from None
