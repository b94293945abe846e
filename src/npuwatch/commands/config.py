"""Arguments of `npuwatch config` (handlers: config_run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npuwatch.commands.outcome import exit_status

_EXIT_STATUS = """\
exit status:
  0  valid (warnings, such as verify_certificates = false, on stderr)
  1  problems: in the file or the NPUWATCH_* variables (one line each on stderr: FILE: KEY:
     REASON), or in a file the agent reads before it starts (a rule pack, the web
     configuration, a secret, CA or certificate file that does not load or is refused)
  2  bad usage, or the configuration file itself is missing or unreadable
"""

_EXAMPLES_CONFIG = (
    """\
examples:
  npuwatch config example > /etc/npuwatch/npuwatch.toml
  npuwatch config check               # $NPUWATCH_CONFIG, else /etc/npuwatch/npuwatch.toml
  npuwatch config check ./npuwatch.toml
  npuwatch config example | npuwatch config check -   # - reads standard input
  NPUWATCH_JOURNAL__MAX_AGE=7d npuwatch config check

The check loads what the agent loads before it starts: the rule packs (npuwatch's own unless
rules.builtin = false, /etc/npuwatch/rules.d, rules.paths), the search engine's secret and CA
files, the exporter's web configuration. What would stop the agent fails the check with the
agent's own lines: the systemd unit runs it as ExecStartPre.

Any key can be set in the environment as NPUWATCH_<SECTION>__<KEY>, with two underscores between
levels (NPUWATCH_SINKS__CONSOLE__ENABLED=true); the environment wins over the file. Values are
read as TOML when they are TOML (true, 10, ["/data/log"]) and as text otherwise (7d).

Secret files (password_file, api_key_file, the web configuration's key_file, and the web
configuration itself when it holds basic_auth_users) that another user may read, and any of those
files or a CA or certificate file that another user owns or may change, are refused as the agent
refuses them, with the fix (chmod 600 FILE); verify_certificates = false is warned about.

"""
    + _EXIT_STATUS
)


def add_config_commands(commands: Any) -> None:
    """Add `config check` and `config example` to the subcommands of the `npuwatch` parser."""
    config = commands.add_parser(
        "config",
        help="check the agent's configuration, or print a complete example",
        description="The agent reads /etc/npuwatch/npuwatch.toml (or the file $NPUWATCH_CONFIG "
        "names), then NPUWATCH_* variables; without a file it runs with the defaults that "
        "`npuwatch config example` prints.",
        epilog=_EXAMPLES_CONFIG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = config.add_subparsers(title="actions", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="validate a file and the NPUWATCH_* variables as the agent would (exit 1 on any "
        "problem)",
        description="Validate a configuration file and the NPUWATCH_* variables as the agent "
        "would load them, and load the rule packs it would use. Prints the journal folder, the "
        "log roots it would follow and the rules; each problem is one line on stderr naming the "
        "file or variable, the key and the reason.",
        epilog=_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "path",
        nargs="?",
        type=Path,
        metavar="FILE",
        help="configuration file, - for standard input (default: $NPUWATCH_CONFIG, else "
        "/etc/npuwatch/npuwatch.toml)",
    )
    check.set_defaults(handler="npuwatch.commands.config_run:run_config_check")
    example = actions.add_parser(
        "example",
        help="print a configuration file with every key at its default, explained",
        description="Print a complete configuration file: every key at its default value, with a "
        "comment saying what it does. Keep only the keys you change.",
        epilog=exit_status("printed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    example.set_defaults(handler="npuwatch.commands.config_run:run_config_example")
