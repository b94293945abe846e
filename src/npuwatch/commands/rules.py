"""Arguments of `npuwatch rules` (handlers: rules_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.offline import add_rules_option
from npuwatch.commands.outcome import exit_status

_RUN = "npuwatch.commands.rules_run"

_EXAMPLES_RULES = """\
examples:
  npuwatch rules list
  npuwatch rules check /etc/npuwatch/rules.d/site.yaml
  npuwatch rules test                 # every example of every configured rule
  npuwatch rules import-faultdiag kg-config.json -o /etc/npuwatch/rules.d/faultdiag.yaml

A rule: id, title, when (a condition such as `error.code == EI0002 or log.level == ERROR and
message ~ /timeout/i`), severity, layer, category, advice, and examples that must and must not
match. A pack may `disable:` rules of other packs by id; a rule with an existing id replaces it.

exit status: see each action's --help (check and test exit 1 on a problem or a failure; 2 is
bad usage or an unreadable input).
"""


def add_rules_commands(commands: Any) -> None:
    rules = commands.add_parser(
        "rules",
        help="list, check and test rule packs; import a FaultDiag knowledge base",
        description="Rules turn records into events with a severity and advice. Packs are YAML "
        "files: the defaults shipped with npuwatch, then /etc/npuwatch/rules.d, then --rules.",
        epilog=_EXAMPLES_RULES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = rules.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        help="rule ids, severities and titles",
        epilog=exit_status("listed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_rules_option(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=f"{_RUN}:run_rules_list")
    for name, handler, text, ok, findings in (
        (
            "check",
            f"{_RUN}:run_rules_check",
            "validate packs (exit 1 on any problem)",
            "every pack valid",
            "a pack has problems (one line each)",
        ),
        (
            "test",
            f"{_RUN}:run_rules_test",
            "run every rule's examples (exit 1 on any failure)",
            "every example holds",
            "an example matched where it must not, or did not where it must",
        ),
    ):
        action = actions.add_parser(
            name,
            help=text,
            description=f"{text[0].upper()}{text[1:]}. Without PATH: every configured pack.",
            epilog=exit_status(ok, findings),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        action.add_argument(
            "paths", nargs="*", type=Path, metavar="PATH", help="pack files or folders"
        )
        action.set_defaults(handler=handler)
    importer = actions.add_parser(
        "import-faultdiag",
        help="convert an Ascend FaultDiag kg-config.json into a rule pack",
        description="Convert MindCluster Ascend FaultDiag's knowledge base (kg-config.json, or a "
        "custom entity file) into an npuwatch rule pack.",
        epilog=exit_status("the pack written"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    importer.add_argument("source", type=Path, metavar="FILE")
    importer.add_argument("-o", "--output", type=Path, required=True, metavar="PACK.yaml")
    importer.set_defaults(handler=f"{_RUN}:run_rules_import")
