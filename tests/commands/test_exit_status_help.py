"""Every command's --help says what its exit codes mean, and 2 means the same everywhere."""

from __future__ import annotations

import argparse
import re

from npuwatch import cli


def test_every_command_s_help_says_what_its_exit_codes_mean() -> None:
    found = dict(cli.every_command())
    assert len(found) > 30
    silent = [name for name, parser in found.items() if "exit status" not in parser.format_help()]
    assert silent == []


def test_two_is_bad_usage_or_unreadable_input_in_every_leaf_command() -> None:
    for name, parser in cli.every_command():
        if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            continue  # a group: its actions say it
        text = " ".join(parser.format_help().split())
        assert re.search(r"\b2\b[^.;]{0,12}bad usage", text), name
