"""The import rules of the architecture (docs/architecture.md): data flows one way.

Parsers and rules are pure: they never reach the files, the journal, the sinks or the command
line; so are the debugging tools' and profilers' readers. The root-cause engine (correlation)
serves scan and the cluster service and reaches neither; scan and doctor are the commands'
alone. Sources never talk to sinks, nor sinks to sources or the agent that runs them (metrics reach Prometheus through observers the topology
wires). The configuration describes the file and nothing else: it imports no runtime module.
Every import counts, also one inside a function (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "src" / "npuwatch"

RUNTIME = ("agent", "collector", "journal", "sinks", "service", "cluster", "commands", "cli")
COMMANDS_ONLY = ("scan", "doctor")
PURE = (*RUNTIME, *COMMANDS_ONLY, "correlation")
RULES: dict[str, tuple[str, ...]] = {
    "parsers": (*PURE, "debug_tools", "profiling"),
    "rules": PURE,
    # The debugging tools' and profilers' readers are pure functions of bytes, like parsers.
    "debug_tools.*.read*": PURE,
    "profiling.msprof": PURE,
    "profiling.opprof.read*": PURE,
    # The root-cause engine serves scan and the cluster service alike: it reaches neither.
    "correlation": (
        "agent",
        "collector",
        "journal",
        "sinks",
        "service",
        "cluster",
        "commands",
        "cli",
        *COMMANDS_ONLY,
    ),
    "collector": ("sinks", "agent", "commands", "cli", "service", "cluster", *COMMANDS_ONLY),
    "journal": (
        "sinks",
        "agent",
        "collector",
        "commands",
        "cli",
        "service",
        "cluster",
        *COMMANDS_ONLY,
    ),
    "sinks": ("agent", "collector", "commands", "cli", "service", "cluster", *COMMANDS_ONLY),
    "config": PURE,
    "vocabulary": ("*",),
    "default_paths": ("*",),
    "problems": ("*",),
    "cann_roots": ("*",),
    "setting_values": ("*",),
}
"""A part of the package (a folder or module; `*` matches one name, and a folder's rule holds
for everything under it), and the parts it must not import ("*": it imports nothing of
npuwatch). Where several rules match a module, all of them hold."""

IMPORTED_ONLY_BY: dict[str, tuple[str, ...]] = dict.fromkeys(COMMANDS_ONLY, ("commands",))
"""Parts that only the commands import: what a command that ends works out, never the agent's
or the cluster service's business."""


def part_of(module: str) -> str:
    """`parsers` for npuwatch.parsers.slog, `cli` for npuwatch.cli."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def rules_of(module: str) -> set[str]:
    """What `module` (npuwatch.x.y) must not import, by every rule whose part holds it."""
    names = module.split(".")[1:]
    forbidden: set[str] = set()
    for part, parts in RULES.items():
        pattern = part.split(".")
        if len(names) >= len(pattern) and all(
            fnmatch.fnmatchcase(name, glob) for name, glob in zip(names, pattern, strict=False)
        ):
            forbidden.update(parts)
    return forbidden


def npuwatch_imports(path: Path) -> set[str]:
    """Every npuwatch module `path` imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("npuwatch"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npuwatch"):
            found.add(str(node.module))
    return found


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        found.append((".".join(relative.parts).removesuffix(".__init__"), path))
    return found


def broken_rules() -> list[str]:
    broken = []
    for module, path in modules():
        forbidden = rules_of(module)
        for imported in sorted(npuwatch_imports(path)):
            target = part_of(imported)
            if target == part_of(module):
                continue
            only_by = IMPORTED_ONLY_BY.get(target, (part_of(module),))
            if "*" in forbidden or target in forbidden or part_of(module) not in only_by:
                broken.append(f"{module} imports {imported}")
    return broken


def test_no_part_of_the_package_imports_what_the_architecture_forbids() -> None:
    assert broken_rules() == []


@pytest.mark.parametrize(
    ("source", "line", "expected"),
    [
        (
            "parsers/x.py",
            "from npuwatch.journal.store import Journal",
            "npuwatch.parsers.x imports npuwatch.journal.store",
        ),
        (
            "collector/x.py",
            "def f():\n    import npuwatch.sinks.console",
            "npuwatch.collector.x imports npuwatch.sinks.console",
        ),
        (
            "config/x.py",
            "from npuwatch.agent.topology import build",
            "npuwatch.config.x imports npuwatch.agent.topology",
        ),
        (
            "debug_tools/precision/read/x.py",
            "from npuwatch.journal.store import Journal",
            "npuwatch.debug_tools.precision.read.x imports npuwatch.journal.store",
        ),
        (
            "profiling/opprof/read_x.py",
            "from npuwatch.scan.tree import scan_tree",
            "npuwatch.profiling.opprof.read_x imports npuwatch.scan.tree",
        ),
        (
            "correlation/x.py",
            "from npuwatch.sinks.console import ConsoleSink",
            "npuwatch.correlation.x imports npuwatch.sinks.console",
        ),
        (
            "agent/x.py",
            "from npuwatch.scan.findings import verdict",
            "npuwatch.agent.x imports npuwatch.scan.findings",
        ),
        (
            "cluster/x.py",
            "def f():\n    from npuwatch.doctor import diagnose",
            "npuwatch.cluster.x imports npuwatch.doctor",
        ),
        (
            "vocabulary.py",
            "from npuwatch.records import Record",
            "npuwatch.vocabulary imports npuwatch.records",
        ),
    ],
)
def test_the_check_would_catch_a_forbidden_import(
    source: str, line: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "npuwatch"
    target = package / source
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{line}\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert broken_rules() == [expected]


def imported_names(path: Path) -> dict[str, str]:
    """The npuwatch names a module imports at its top (or under `if TYPE_CHECKING`), each with
    the module it imports it from."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [*tree.body, *(n for s in tree.body if isinstance(s, ast.If) for n in s.body)]
    return {
        alias.asname or alias.name: str(node.module)
        for node in nodes
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npuwatch.")
        for alias in node.names
    }


def re_exports_used() -> list[str]:
    """Every `from npuwatch.M import n` of the package, the tests, bench/ and scripts/ where M
    does not define `n` but imports it: a name that should be imported from where it lives."""
    files = dict(modules())
    found = []
    for root in ("src", "tests", "bench", "scripts", "fixtures"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or node.module not in files:
                    continue
                imported = imported_names(files[node.module])
                for alias in node.names:
                    if alias.name in imported and f"{node.module}.{alias.name}" not in files:
                        where = path.relative_to(REPO)
                        found.append(f"{where}:{node.lineno}: {node.module}.{alias.name}")
    return found


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    assert re_exports_used() == []


WRITTEN_IMPORT = re.compile(r"from (npuwatch(?:\.\w+)*) import ((?:\w+(?: as \w+)?(?:, )?)+)")
"""`from npuwatch.x import a, b` as code, inside a string (code a test runs in a subprocess) or
in the documentation."""
SYNTHETIC = {"tests/test_architecture.py"}
"""Files whose written imports are made up on purpose (the forbidden imports above)."""


def unresolved_written_imports() -> list[str]:
    """Every `from npuwatch.x import n` written anywhere in the repository where x has no `n`
    (neither a name nor a submodule): an import a move or a removed re-export broke."""
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.sh"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    broken = []
    for name in listed.stdout.split():
        if name in SYNTHETIC or not (REPO / name).is_file():
            continue
        for match in WRITTEN_IMPORT.finditer((REPO / name).read_text(encoding="utf-8")):
            module = importlib.import_module(match.group(1))
            for written in match.group(2).split(", "):
                imported = written.split(" as ")[0]
                if hasattr(module, imported):
                    continue
                package = hasattr(module, "__path__")
                if not package or importlib.util.find_spec(f"{match.group(1)}.{imported}") is None:
                    broken.append(f"{name}: from {match.group(1)} import {imported}")
    return broken


def test_every_import_written_in_the_repository_resolves() -> None:
    assert unresolved_written_imports() == []
