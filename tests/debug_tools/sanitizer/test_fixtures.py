"""The msSanitizer/msaicerr fixtures are rewritten identically by their generator and stay
small."""

from __future__ import annotations

from pathlib import Path

from fixtures.debug_tools.make_sanitizer import write_sanitizer_fixtures

from tests.conftest import FIXTURES

SANITIZER = FIXTURES / "debug_tools" / "sanitizer"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_generator_rewrites_the_committed_fixtures_byte_for_byte(tmp_path: Path) -> None:
    written = write_sanitizer_fixtures(tmp_path)
    assert _files(written) == _files(SANITIZER)


def test_the_fixtures_stay_small() -> None:
    assert sum(len(content) for content in _files(SANITIZER).values()) < 30_000


def test_the_variants_are_really_there() -> None:
    assert b"\r\n" in (SANITIZER / "pasted_crlf.log").read_bytes()
    assert not (SANITIZER / "truncated.log").read_bytes().endswith(b"\n")
    debug = SANITIZER / "msaicerr_out" / "info_20260415111938" / "debug_info.txt"
    assert debug.read_bytes().count(b"\r\n") == 4
