"""Whether this installation runs npuwatch's C speedups, said where an operator looks.

Three C extensions do the per-line work: the parser's first pass, the columns of journal
blocks and the trigram filters of their text frames. All are optional (setup.py): a host that
installed from the source distribution without a C compiler or its Python's headers runs the
identical pure-Python code, at about 2.4 times the CPU a line next to the training job. Nothing
else shows which one a host runs, so `npuwatch --version`, `doctor`, the agent's start and its
`npuwatch_build_info` metric say it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import npuwatch

EXTENSIONS = {
    "first pass": "npuwatch.parsers._speedups",
    "block columns": "npuwatch.journal._columns",
    "trigram filters": "npuwatch.journal._trigrams",
}
"""Each C extension by what it speeds up."""

COST = "the same records at about 2.4x the CPU a line"
ADVICE = (
    "install npuwatch from a wheel built for this machine, or install gcc and this Python's "
    "headers (python3-dev) and reinstall it"
)


@dataclass(frozen=True)
class Speedups:
    """Which C extensions loaded, and why each missing one did not."""

    loaded: tuple[str, ...]
    missing: dict[str, str]
    """What each missing extension speeds up → the import error."""

    @property
    def on(self) -> bool:
        return not self.missing

    @property
    def label(self) -> str:
        """The `speedups` label of npuwatch_build_info: c, python, or partial."""
        return "c" if self.on else "python" if not self.loaded else "partial"

    def summary(self) -> str:
        """One phrase: `C speedups on`, or what is off and what it costs."""
        if self.on:
            return "C speedups on"
        missing = list(self.missing)
        named = ", ".join(missing[:-1]) + " and " if len(missing) > 1 else ""
        return f"C speedups off: {named}{missing[-1]} in pure Python, {COST}"


def speedups() -> Speedups:
    """Which C extensions load here (each loaded from its file: see `_refusal`)."""
    loaded: list[str] = []
    missing: dict[str, str] = {}
    for part, module in EXTENSIONS.items():
        refusal = _refusal(module)
        if refusal is None:
            loaded.append(part)
        else:
            missing[part] = refusal
    return Speedups(tuple(loaded), missing)


def _refusal(module: str) -> str | None:
    """None when the extension `module` loads; else why it does not. Its shared object is
    loaded from the package folder without importing the package around it (the parser's
    package is what `doctor` and `--version` need not load): a file built for another machine
    or another Python is refused here as it would be by the import."""
    if module in sys.modules:
        return None
    package, _, name = module.rpartition(".")
    folder = Path(npuwatch.__file__).parent.joinpath(*package.split(".")[1:])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_file():
            break
    else:
        return "not built: no compiled module in the installed package"
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None:
        return f"{path} cannot be loaded"
    try:
        importlib.util.module_from_spec(spec)  # loads the shared object and runs its init
    except ImportError as error:
        return str(error) or type(error).__name__
    return None
