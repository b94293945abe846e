"""`npuwatch rules`: list, check and test rule packs; import a FaultDiag knowledge base."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.commands.rules_in_force import load_rules_or_fail
from npuwatch.rules.examples import run_examples
from npuwatch.rules.faultdiag import convert_faultdiag
from npuwatch.rules.loader import RuleSet, default_locations, load_rules
from npuwatch.rules.pack import RuleLoadError
from npuwatch.terminal import Palette, wants_colour


def run_rules_list(args: argparse.Namespace) -> int:
    ruleset = load_rules_or_fail(args.rules)
    if args.json:
        json.dump(
            [
                {
                    "id": r.id,
                    "severity": r.spec.severity,
                    "layer": r.spec.layer,
                    "category": r.spec.category,
                    "title": r.spec.title,
                    "pack": r.pack,
                    "origin": r.origin,
                }
                for r in ruleset.rules
            ],
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return EXIT_OK
    palette = Palette(wants_colour(sys.stdout))
    for rule in ruleset.rules:
        severity = rule.spec.severity.upper()
        sys.stdout.write(
            f"{rule.id:42} {palette.level(severity, f'{severity:8}')} {rule.spec.title}\n"
        )
    sys.stdout.write(f"{len(ruleset.rules)} rules from {len(ruleset.files)} packs\n")
    return EXIT_OK


def _rule_locations(paths: Sequence[Path]) -> list[Path]:
    for path in paths:
        if not path.exists():
            fail(f"rule pack {path} does not exist")
    return list(paths) if paths else default_locations()


def _load_for_checking(paths: Sequence[Path]) -> RuleSet | None:
    """The rule set at `paths` (every configured pack when none), or None after printing its
    problems."""
    try:
        return load_rules(_rule_locations(paths))
    except RuleLoadError as error:
        for problem in error.problems:
            sys.stdout.write(f"{problem}\n")
        sys.stdout.write(f"{len(error.problems)} problems\n")
        return None


def run_rules_check(args: argparse.Namespace) -> int:
    ruleset = _load_for_checking(args.paths)
    if ruleset is None:
        return EXIT_FINDINGS
    unindexed = [rule for rule in ruleset.rules if rule.keys is None]
    for rule in unindexed:
        sys.stdout.write(
            f"{rule.origin}: note: rule {rule.id} has no index key (code, level, module, format "
            "or literal) and is tested against every record\n"
        )
    sys.stdout.write(f"{len(ruleset.rules)} rules in {len(ruleset.files)} packs: OK\n")
    return EXIT_OK


def run_rules_test(args: argparse.Namespace) -> int:
    ruleset = _load_for_checking(args.paths)
    if ruleset is None:
        return EXIT_FINDINGS
    count, failures = run_examples(ruleset.rules)
    for failure in failures:
        sys.stdout.write(f"{failure}\n")
    missing = [rule for rule in ruleset.rules if not rule.spec.examples.match]
    for rule in missing:
        sys.stdout.write(f"{rule.origin}: rule {rule.id} has no example that must match\n")
    status = "FAILED" if failures or missing else "OK"
    sys.stdout.write(
        f"{count} examples of {len(ruleset.rules)} rules: {len(failures)} failed, "
        f"{len(missing)} rules without examples: {status}\n"
    )
    return EXIT_FINDINGS if failures or missing else EXIT_OK


def run_rules_import(args: argparse.Namespace) -> int:
    try:
        pack_text, count = convert_faultdiag(args.source)
    except OSError as problem:
        fail(f"cannot import {args.source}: {problem.strerror or problem}")
    except ValueError as problem:
        fail(f"cannot import {args.source}: {problem}")
    args.output.write_text(pack_text, encoding="utf-8")
    sys.stderr.write(f"npuwatch: wrote {count} rules to {args.output}\n")
    return EXIT_OK
