"""Reading the version files of an Ascend install, leniently, and finding the CANN toolkits.

The files are `key=value` lines:

- the toolkit's `version.cfg` holds one line per component and state, the running version
  first: `runtime_running_version=[7.0.0.5.242:7.0.0]` (the inner version, then the public
  one), `toolkit_installed_version=[...]`, after a `# version: 1.0` comment;
- `<arch>-linux/ascend_toolkit_install.info` (and the `*_install.info` of other packages) says
  `version=7.0.0`, next to `innerversion=`, `arch=` and `path=`;
- the driver's and the firmware's `version.info` say `Version=23.0.rc3`, next to
  `package_version=` and the compatible versions.

Keys are read case-insensitively and anything else in the files is ignored, so a release that
adds keys or reorders them still gives its version.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from npuwatch.doctor.host import DoctorOptions, Host, is_dir, read_text

_BRACKETED = re.compile(r"\[([^\]]*)\]")

_VERSION_CFG_KEYS = (
    "toolkit_running_version",
    "runtime_running_version",
    "toolkit_installed_version",
    "runtime_installed_version",
)
"""The keys of version.cfg that name the toolkit's version, best first (the running one)."""

TOOLKIT_ENVIRONMENT = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
"""What CANN's set_env.sh exports: the toolkit this shell's jobs use."""

TOOLKIT_HOME = "/usr/local/Ascend/ascend-toolkit"
USER_TOOLKIT_HOME = "Ascend/ascend-toolkit/latest"
"""Where a non-root install goes, under the user's home."""


def read_key_values(text: str) -> dict[str, str]:
    """The `key=value` lines of an Ascend version file, keys lower-cased; the rest is ignored."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip():
            values[key.strip().lower()] = value.strip()
    return values


def bracketed_version(value: str) -> str | None:
    """The public version of a version.cfg value: `[7.0.0.5.242:7.0.0]` gives 7.0.0.

    With several brackets the last is taken; a bare value is returned as it is.
    """
    groups = _BRACKETED.findall(value)
    text = groups[-1] if groups else value
    inner, sep, public = text.partition(":")
    version = public if sep and public.strip() else inner
    return version.strip() or None


def version_from_version_cfg(text: str) -> str | None:
    """The toolkit's version in a version.cfg: the running one, else the installed one."""
    values = read_key_values(text)
    others = sorted(key for key in values if key.endswith("_version"))
    for key in (*_VERSION_CFG_KEYS, *others):
        version = bracketed_version(values[key]) if key in values else None
        if version:
            return version
    return None


def version_from_info(text: str) -> str | None:
    """The version in an `*_install.info` or `version.info`: `Version=`, else `package_version=`."""
    values = read_key_values(text)
    for key in ("version", "package_version"):
        if values.get(key):
            return values[key]
    return None


@dataclass(frozen=True)
class VersionFile:
    """A version read from a file, and the file."""

    version: str
    path: Path


def read_version_file(path: Path) -> VersionFile | None:
    """The version in one file (version.cfg, or an .info file), or None when it has none."""
    text = read_text(path)
    if text is None:
        return None
    reader = version_from_version_cfg if path.name == "version.cfg" else version_from_info
    version = reader(text)
    return None if version is None else VersionFile(version, path)


def toolkit_version(folder: Path) -> VersionFile | None:
    """The version of the toolkit installed in `folder`, from the first file that names one."""
    for path in _toolkit_version_files(folder):
        found = read_version_file(path)
        if found is not None:
            return found
    return None


def _toolkit_version_files(folder: Path) -> Iterator[Path]:
    yield folder / "version.cfg"
    yield from _glob(folder, "*/ascend_toolkit_install.info")
    yield folder / "ascend_toolkit_install.info"
    yield from _glob(folder, "*/*_install.info")
    yield from _glob(folder, "*_install.info")
    for component in ("runtime", "compiler"):
        yield folder / component / "version.info"


def _glob(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(folder.glob(pattern))
    except OSError:
        return []


@dataclass(frozen=True)
class ToolkitFolder:
    """A place a toolkit may be, who named it, and the version found there (None: none)."""

    folder: Path
    named_by: str
    """`--toolkit`, an environment variable, or `default location`."""
    found: VersionFile | None
    exists: bool


def find_toolkits(host: Host, options: DoctorOptions) -> list[ToolkitFolder]:
    """Every place a toolkit may be, in the order CANN's users look, each folder once."""
    if options.toolkit is not None:
        candidates = [(options.toolkit, "--toolkit")]
    else:
        candidates = _searched_places(host)
    seen: set[Path] = set()
    folders: list[ToolkitFolder] = []
    for folder, named_by in candidates:
        there = is_dir(folder)
        identity = folder.resolve() if there else folder
        if identity in seen:
            continue
        seen.add(identity)
        found = toolkit_version(folder) if there else None
        folders.append(ToolkitFolder(folder, named_by, found, there))
    return folders


def _searched_places(host: Host) -> list[tuple[Path, str]]:
    places: list[tuple[Path, str]] = []
    for name in TOOLKIT_ENVIRONMENT:
        path = host.env_path(name)
        if path is not None:
            places.append((path, f"${name}"))
    home = host.at(TOOLKIT_HOME)
    places.append((home / "latest", "default location"))
    versions = [p for p in _glob(home, "*") if p.name != "latest" and is_dir(p)]
    places.extend((path, "default location") for path in versions)
    if host.home is not None:
        places.append((host.home / USER_TOOLKIT_HOME, "default location"))
    return places
