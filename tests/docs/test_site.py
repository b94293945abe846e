"""The documentation site: its reference pages are what the code says today, it builds with
`mkdocs build --strict` (no broken link, no page left out of the navigation), and the README
stays a front door."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

README_LINES = 250


def reference_docs() -> ModuleType:
    path = REPO / "scripts" / "reference_docs.py"
    spec = importlib.util.spec_from_file_location("reference_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return dict(reference_docs().pages())


def test_every_reference_page_is_what_the_code_generates(generated: dict[str, str]) -> None:
    stale = [
        name
        for name, text in generated.items()
        if not (REPO / "docs" / "reference" / name).exists()
        or (REPO / "docs" / "reference" / name).read_text("utf-8") != text
    ]
    assert stale == [], f"stale reference pages {stale}: run python scripts/reference_docs.py"


def test_the_reference_names_every_command_key_metric_and_alert(generated: dict[str, str]) -> None:
    # (the generation could silently drop a part: a few that must be there, one of each kind)
    assert "## `npuwatch correlate`" in generated["commands.md"]
    assert "### `npuwatch incident show`" in generated["commands.md"]
    assert '| `drain_timeout` | `"1m"` |' in generated["configuration.md"]
    assert "## `[sinks.elasticsearch]`" in generated["configuration.md"]
    assert "| `npuwatch_files_deleted_while_stopped_total` | counter |" in generated["metrics.md"]
    assert "## The correlator" in generated["metrics.md"]
    assert "### `AscendCollectiveIncident`" in generated["alerts.md"]
    assert "| `ascend.error_codes` |" in generated["records.md"]
    assert "| `close_reason` |" in generated["incidents.md"]


def test_an_incident_key_without_an_explanation_stops_the_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = reference_docs()
    monkeypatch.delitem(module.INCIDENT_KEYS, "victims_count")
    with pytest.raises(SystemExit, match="victims_count"):
        module.incidents_page()


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "reference" / "commands" / "index.html").exists()


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text("utf-8").splitlines()
    assert len(lines) < README_LINES
    for page in ("docs/guides/scan.md", "docs/guides/service.md", "docs/performance.md"):
        assert f"]({page})" in "\n".join(lines), page
        assert (REPO / page).exists()


def test_the_changelog_is_kept_by_release_and_its_newest_is_the_version() -> None:
    from npuwatch import __version__

    text = (REPO / "CHANGELOG.md").read_text("utf-8")
    releases = re.findall(
        r"^## \[([0-9]+\.[0-9]+\.[0-9]+)\] - (Unreleased|\d{4}-\d{2}-\d{2})$", text, re.M
    )
    headings = re.findall(r"^## .*$", text, re.M)
    assert len(releases) == len(headings) >= 2  # every version heading as Keep a Changelog has it
    assert releases[0][0] == __version__
    for release in re.split(r"^## .*$", text, flags=re.M)[1:]:
        kinds = re.findall(r"^### (.+)$", release, re.M)
        assert len(kinds) == len(set(kinds)), kinds  # each kind of change once a release
        assert set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
