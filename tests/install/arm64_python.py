"""Debian's arm64 Python 3.11, unpacked into a folder and run under qemu-user: an aarch64 host
(a Kunpeng server) for the tests of the aarch64 wheel, on this x86_64 machine.

The packages come from Debian's own mirror (the arm64 Packages index, then each .deb), are
unpacked with `dpkg -x` and kept in a cache folder, so that the machine's apt configuration is
left alone and the download happens once. `qemu-aarch64 -L ROOT` runs ROOT's binaries with
ROOT's loader and libraries.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
PACKAGES = (
    # the interpreter and its standard library
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib",
    # what the standard library's extension modules npuwatch uses link against (sqlite3, ssl,
    # hashlib, zlib, bz2, lzma, ctypes, uuid)
    "libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libexpat1", "libssl3", "libffi8",
    "libsqlite3-0", "libbz2-1.0", "liblzma5", "libuuid1", "libcrypt1",
    "libncursesw6", "libtinfo6", "libreadline8", "libdb5.3", "libnsl2", "libtirpc3",
    "libgssapi-krb5-2", "libkrb5-3", "libk5crypto3", "libkrb5support0", "libcom-err2",
    "libkeyutils1",
)  # fmt: skip
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "npuwatch-tests"


class Unavailable(Exception):
    """What is missing for an arm64 Python here (said in the test's skip)."""


@dataclass(frozen=True)
class Arm64Python:
    root: Path
    qemu: str

    @property
    def python(self) -> Path:
        return self.root / "usr" / "bin" / "python3.11"

    def command(self, program: Path | str, *args: str | Path) -> list[str]:
        """`program` (an arm64 binary, or a script of one) run under qemu with ROOT's libraries."""
        return [self.qemu, "-L", str(self.root), str(program), *map(str, args)]


def arm64_python() -> Arm64Python:
    """The unpacked arm64 Python (unpacked on first use); Unavailable says why not."""
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        raise Unavailable("qemu-aarch64 is not installed (Debian package qemu-user)")
    if shutil.which("dpkg") is None:
        raise Unavailable("dpkg is not installed (it unpacks Debian's arm64 packages)")
    root = CACHE / f"arm64-{SUITE}-python3.11"
    if not (root / "usr" / "bin" / "python3.11").is_file():
        _unpack(root)
    return Arm64Python(root, qemu)


def _unpack(root: Path) -> None:
    debs = CACHE / "arm64-debs"
    debs.mkdir(parents=True, exist_ok=True)
    index = _packages_index()
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in PACKAGES:
        if name not in index:
            raise Unavailable(f"{name} is not in Debian {SUITE}'s arm64 index")
        filename, sha256 = index[name]
        deb = debs / Path(filename).name
        if not deb.is_file() or hashlib.sha256(deb.read_bytes()).hexdigest() != sha256:
            _download(f"{MIRROR}/{filename}", deb)
            if hashlib.sha256(deb.read_bytes()).hexdigest() != sha256:
                raise Unavailable(f"{deb.name} does not match the index's SHA256")
        subprocess.run(["dpkg", "-x", str(deb), str(staging)], check=True)
    staging.rename(root)


def _packages_index() -> dict[str, tuple[str, str]]:
    """Package name → (its file on the mirror, its SHA256), from the arm64 Packages index."""
    url = f"{MIRROR}/dists/{SUITE}/main/binary-arm64/Packages.xz"
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:
            text = lzma.decompress(answer.read()).decode("utf-8", "replace")
    except OSError as error:
        raise Unavailable(f"Debian's arm64 index cannot be read from {url}: {error}") from None
    found: dict[str, tuple[str, str]] = {}
    for stanza in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if "Package" in fields and "Filename" in fields:
            found[fields["Package"]] = (fields["Filename"], fields.get("SHA256", ""))
    return found


def _download(url: str, target: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=300) as answer:
            target.write_bytes(answer.read())
    except OSError as error:
        raise Unavailable(f"{url} cannot be downloaded: {error}") from None
