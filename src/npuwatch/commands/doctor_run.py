"""`npuwatch doctor`: check this host's Ascend environment, devices and logs, and report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.doctor.diagnosis import diagnose
from npuwatch.doctor.host import DoctorOptions, Host
from npuwatch.doctor.render import as_json, as_text
from npuwatch.setting_values import command_words
from npuwatch.terminal import Palette, wants_colour

MAX_SAMPLE_SECONDS = 3600
"""An hour: doctor is a quick look; longer growth is a job for the agent's metrics."""


def run_doctor(args: argparse.Namespace) -> int:
    diagnosis = diagnose(Host(environ=os.environ), options_from(args))
    out = sys.stdout
    out.write(as_json(diagnosis) if args.json else as_text(diagnosis, Palette(wants_colour(out))))
    return EXIT_FINDINGS if diagnosis.has_findings else EXIT_OK


def options_from(args: argparse.Namespace) -> DoctorOptions:
    """The options, checked: a folder the user named must exist (a typo is no diagnosis)."""
    try:
        command = command_words(args.npu_smi)
    except ValueError as problem:
        fail(f"--npu-smi {args.npu_smi!r}: {problem} (give a command such as 'npu-smi info')")
    if not 0 <= args.sample_seconds <= MAX_SAMPLE_SECONDS:
        fail(
            f"--sample-seconds {args.sample_seconds:g}: give 0 (skip) or a number of seconds up "
            f"to {MAX_SAMPLE_SECONDS} (watch longer growth with `du -s` over time)"
        )
    for option, path in (("--toolkit", args.toolkit), ("--log-dir", args.log_dir)):
        if path is not None and not Path(path).is_dir():
            fail(f"{option} {path}: no such folder (check the path)")
    return DoctorOptions(
        npu_smi=command,
        toolkit=args.toolkit,
        log_dir=args.log_dir,
        sample_seconds=args.sample_seconds,
    )
