"""Subcommands of `npuwatch`, one module each, added to the parser by cli.py."""
