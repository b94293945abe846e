"""docs › "Run as a service" (docs/guides/service.md), every command of it run into a temporary root: the virtual
environment stands in for /opt/npuwatch, the configuration goes to a temporary /etc, and the
unit, pointed at the environment by the guide's own drop-in, is enabled with `systemctl --root`.
The commands are read from the guide, so that it cannot drift from what works; a step that
cannot be placed in the root fails the run."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO
from tests.install.installing import Artefacts, clean_environment, run
from tests.install.readme_blocks import commands, fenced_blocks, moved, outside

GUIDE = REPO / "docs" / "guides" / "service.md"
SECTION = "## Run as a service"
ENABLE = "systemctl daemon-reload && systemctl enable --now npuwatch"
NEEDS_A_RUNNING_SYSTEMD = ("systemctl status ", "systemctl reload ", "journalctl ")
DROP_IN_PREFIX = "/srv/npuwatch"
"""Where the guide's drop-in example has npuwatch installed."""


def service_commands() -> list[str]:
    return commands(fenced_blocks(GUIDE, SECTION, "sh")[0])


def drop_in_text() -> str:
    return "\n".join(fenced_blocks(GUIDE, SECTION, "ini")[0]) + "\n"


@dataclass
class ServiceRoot:
    """The temporary root after the guide's steps, and what each step printed."""

    root: Path
    results: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def unit(self) -> Path:
        return self.root / "etc" / "systemd" / "system" / "npuwatch.service"

    @property
    def drop_in(self) -> Path:
        return self.unit.with_name("npuwatch.service.d") / "override.conf"

    @property
    def environment(self) -> Path:
        return self.root / "opt" / "npuwatch"

    def result(self, start: str) -> subprocess.CompletedProcess[str]:
        (found,) = [result for command, result in self.results.items() if command.startswith(start)]
        return found


def unpacked_sdist(artefacts: Artefacts, folder: Path) -> Path:
    """The sdist unpacked, with the wheel in its dist/: where the guide's commands run."""
    with tarfile.open(artefacts.sdist) as sdist:
        # (the "data" filter where this Python has it: 3.11.4 and later, Debian 12's 3.11.2 not)
        if hasattr(tarfile, "data_filter"):
            sdist.extractall(folder, filter="data")
        else:
            sdist.extractall(folder)  # (the sdist this session built)
    (source,) = folder.iterdir()
    (source / "dist").mkdir()
    (source / "dist" / artefacts.wheel.name).write_bytes(artefacts.wheel.read_bytes())
    return source


def run_service_steps(artefacts: Artefacts, wheelhouse: Path, base: Path) -> ServiceRoot:
    """Every command of the guide's service block, in order, into `base`/root."""
    root = base / "root"
    # What every host has before the first step.
    for folder in ("etc/systemd/system", "usr/local/bin", "opt"):
        (root / folder).mkdir(parents=True)
    source = unpacked_sdist(artefacts, base / "source")
    places = {
        "/opt/npuwatch": f"{root}/opt/npuwatch",
        "/etc/npuwatch": f"{root}/etc/npuwatch",
        "/etc/systemd/system": f"{root}/etc/systemd/system",
        "/usr/local/bin": f"{root}/usr/local/bin",
    }
    environment = clean_environment(
        {
            # The dependencies from the session's wheelhouse, not 100 MB again from the index.
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheelhouse),
            # /usr/local/bin is on root's PATH; the configuration is looked for where the
            # agent's would be.
            "PATH": f"{root}/usr/local/bin:{clean_environment()['PATH']}",
            "NPUWATCH_CONFIG": f"{root}/etc/npuwatch/npuwatch.toml",
        }
    )
    done = ServiceRoot(root)
    for command in service_commands():
        if command.startswith(NEEDS_A_RUNNING_SYSTEMD):
            done.skipped.append(command)
            continue
        if command == ENABLE:
            # No systemd runs here: the unit is enabled offline in the root, after the
            # guide's drop-in has pointed it at the environment.
            done.drop_in.parent.mkdir()
            done.drop_in.write_text(moved(drop_in_text(), {DROP_IN_PREFIX: str(done.environment)}))
            enable = ["systemctl", f"--root={root}", "enable", "npuwatch"]
            done.results[command] = run(enable, source, environment)
            continue
        local = re.sub(r"^python3 ", f"{sys.executable} ", moved(command, places))
        known = (f"{sys.executable} -m venv ", f"{root}/", "install -d ", "npuwatch ", "cp ", "ln ")
        assert local.startswith(known), (
            f"docs/guides/service.md › Run as a service has a step this test does not know how to run in a "
            f"temporary root: {command!r}; teach tests/install/service_steps.py"
        )
        assert outside(local, root, (sys.executable,)) == [], f"{command!r} leaves the root"
        done.results[command] = run(["bash", "-c", local], source, environment)
    return done
