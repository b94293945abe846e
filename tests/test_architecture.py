"""The import rules of the architecture (docs/architecture.md): data flows one way.

Parsers and rules are pure: they never reach the files, the journal, the sinks or the command
line. Sources never talk to sinks, nor sinks to sources or the agent that runs them (metrics reach Prometheus through observers the topology
wires). The configuration describes the file and nothing else: it imports no runtime module.
Every import counts, also one inside a function (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "src" / "npuwatch"

RUNTIME = ("agent", "collector", "journal", "sinks", "service", "commands", "cli", "analysis")
RULES: dict[str, tuple[str, ...]] = {
    "parsers": RUNTIME,
    "rules": RUNTIME,
    "collector": ("sinks", "agent", "commands", "cli", "analysis", "service"),
    "journal": ("sinks", "agent", "collector", "commands", "cli", "analysis", "service"),
    "sinks": ("agent", "collector", "commands", "cli", "analysis", "service"),
    "config": RUNTIME,
    "vocabulary": ("*",),
    "default_paths": ("*",),
    "problems": ("*",),
    "cann_roots": ("*",),
    "setting_values": ("*",),
}
"""A part of the package (a folder or a module), and the parts it must not import ("*": it
imports nothing of npuwatch)."""


def part_of(module: str) -> str:
    """`parsers` for npuwatch.parsers.slog, `cli` for npuwatch.cli."""
    return module.split(".")[1] if module.count(".") >= 1 else module


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
        forbidden = RULES.get(part_of(module))
        if forbidden is None:
            continue
        for imported in sorted(npuwatch_imports(path)):
            target = part_of(imported)
            if target == part_of(module):
                continue
            if "*" in forbidden or target in forbidden:
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
