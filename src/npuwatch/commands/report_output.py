"""How the summary commands (`profile`, `precision`, `monitor`, `sanitizer`) hand over a report:
one JSON document or the text report, and the chart, said the same way by each."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from npuwatch.commands.outcome import fail
from npuwatch.terminal import Palette, wants_colour


def print_report(
    document: Callable[[], Mapping[str, Any]], text: Callable[[Palette], str], as_json: bool
) -> None:
    """`document()` as one JSON document with --json, else `text(palette)`."""
    if as_json:
        json.dump(document(), sys.stdout, ensure_ascii=False, indent=2)
    else:
        sys.stdout.write(text(Palette(wants_colour(sys.stdout))))
    sys.stdout.write("\n")


def draw(write: Callable[[Path], None], path: str) -> None:
    """Write the chart to `path`, or leave with one error line (a folder that is not there,
    no permission; a chart that cannot be drawn says why with ValueError)."""
    try:
        write(Path(path))
    except OSError as failure:
        fail(f"cannot write the plot {path}: {failure.strerror or failure}")
    except ValueError as failure:
        fail(str(failure))


def matplotlib_missing() -> NoReturn:
    fail("--plot needs matplotlib: pip install 'npuwatch[plot]'")
